"""What happens to systems' spoken replies to EchoMind deliveries once stored: their audio measured
(`quality`) and listened to in studies (`listening`)."""
