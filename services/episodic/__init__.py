"""Episodic memory: the durable record of every retained turn and every episode, in PostgreSQL."""
