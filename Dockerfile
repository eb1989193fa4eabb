# syntax=docker/dockerfile:1
# One image for every layer: `hindsight serve <layer>` picks the service (docker-compose.yml, k8s/).
#   docker build -t hindsight-memory:0.1.0 .
# The embedding and reranking models are files inside pip packages (nanoranker, ...), installed here at build
# time with the other dependencies: nothing is downloaded when a container runs. To pin the base image by
# digest, pass it in: --build-arg PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:<digest>. Any Debian-like
# base with Python 3.11 and its venv module will do (scripts/containers_check.py builds one with debootstrap).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/hindsight
# Every distribution, transitive ones and the build backend included, comes from the lock: exact pins, each
# file checked against its sha256, nothing resolved at build time (regenerate: scripts/lock_image.py).
COPY requirements/image.lock ./requirements/image.lock
RUN /opt/hindsight/bin/pip install --require-hashes --no-deps -r requirements/image.lock
COPY pyproject.toml setup.py README.md NOTICE ./
COPY services ./services
# A non-editable install: the venv alone is the application, copied whole into the runtime stage. No
# dependency or build tool is fetched here (--no-deps, --no-build-isolation); pip check fails the build if
# the lock lacks something the package needs.
RUN /opt/hindsight/bin/pip install --no-deps --no-build-isolation . \
 && /opt/hindsight/bin/pip check \
 && /opt/hindsight/bin/python -c "from hindsight.inference.models import packaged_use_path; print(packaged_use_path())"

FROM ${PYTHON_IMAGE}
# /var/lib/hindsight belongs to the runtime user so that a volume mounted there (the semantic layer's
# in-process vector store, HINDSIGHT_QDRANT_PATH) starts out writable on a read-only root filesystem.
RUN groupadd --gid 10001 hindsight \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin hindsight \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/hindsight
COPY --from=build /opt/hindsight /opt/hindsight
COPY NOTICE /usr/share/doc/hindsight/NOTICE
ENV PATH=/opt/hindsight/bin:$PATH \
    HINDSIGHT_HOST=0.0.0.0 \
    HINDSIGHT_PORT=50051 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /tmp
USER 10001:10001
EXPOSE 50051 8765
# Liveness of whichever layer runs here; compose and Kubernetes also ask each layer's readiness by name.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["hindsight", "healthcheck", "--address", "127.0.0.1:50051"]
ENTRYPOINT ["hindsight"]
CMD ["serve", "mcp_edge"]
