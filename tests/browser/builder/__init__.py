"""Browser tests of the EchoDialogue builder pages."""
