"""Demo data for `manage.py seed_demo`: users, items with eSpeak NG speech, labels and gold."""
