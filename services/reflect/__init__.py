"""Reflective memory: lessons drawn from finished episodes, with confidence and hit counts."""
