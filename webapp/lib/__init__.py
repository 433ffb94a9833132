"""Django-free helpers several apps share: statistics, the OpenAI-compatible LLM client, the
EchoChat output format and the vocabularies.
"""
