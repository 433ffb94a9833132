"""The REST API's shared parts: personal tokens, the error shape, cursor pagination, the account page."""
