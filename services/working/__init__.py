"""Working memory: the current session's recent turns, in Redis with a TTL."""
