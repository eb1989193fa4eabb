"""The web memory console served by the edge at ``/console``: a page, its assets and a small JSON API."""
