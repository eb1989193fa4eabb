"""Package discovery for the ``services/`` tree, installed as the single ``hindsight`` package.

pyproject.toml holds the metadata; this file only maps ``services/x`` to ``hindsight.x``, which
setuptools' declarative discovery cannot express.
"""

from setuptools import find_packages, setup

setup(packages=["hindsight", *(f"hindsight.{name}" for name in find_packages("services"))])
