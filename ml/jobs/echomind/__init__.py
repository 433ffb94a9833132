"""EchoMind on the ML side: a checkpoint answers the delivery sets' questions and replies to each delivery."""
