# Rungwise web / worker / beat image (one image, three commands: see docker-compose.yml).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    STATIC_ROOT=/app/staticfiles \
    MEDIA_ROOT=/data/media \
    RUNGWISE_BIND=0.0.0.0
# RUNGWISE_BIND: the image cannot see where `docker run -p` publishes it, so it counts as reachable
# by others; docker-compose.yml sets the address it really publishes on.

WORKDIR /app
COPY pyproject.toml ./
# Install the dependencies first so that code changes reuse this layer.
RUN pip install --upgrade pip && pip install .
COPY . .
RUN DEBUG=0 SECRET_KEY=build-only python manage.py collectstatic --noinput \
    && useradd --system --uid 1000 --home /app rungwise \
    && mkdir -p /data/media /data/beat && chown -R rungwise /data
USER rungwise
EXPOSE 8000
# The web server (docker-compose.yml's web command, which migrates first): see README, "Running
# the services". Workers: one per core; blocking threads per worker: requests waiting on the
# database at once.
CMD ["granian", "--interface", "wsgi", "rungwise.wsgi:application", "--host", "0.0.0.0", "--port", "8000", "--workers", "2", "--blocking-threads", "4", "--no-ws", "--respawn-failed-workers", "--access-log"]
