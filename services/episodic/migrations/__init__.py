"""Numbered SQL migrations of the episodic schema (a package so that wheels ship the .sql files)."""
