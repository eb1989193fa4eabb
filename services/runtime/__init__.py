"""The shared runtime every service is built on: settings, logging, errors, auth, server bootstrap, channels.

It imports no layer; every layer imports it.
"""
