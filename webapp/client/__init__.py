"""`python -m webapp.client`: EchoStudio's command-line client (httpx, no Django), for scripts that
register a system, upload its outputs, judge them and read the leaderboard."""
