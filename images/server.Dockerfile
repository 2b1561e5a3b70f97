# Server: the sandbox-env package, its task repos and the Docker SDK (talks to the host engine
# through the mounted socket). No torch: commands run in runner containers.
# Offline: --build-arg BASE_IMAGE=sandbox-env-base:bookworm
#          --build-arg PIP_INSTALL_ARGS="--no-index --find-links /wheels"
# Build context: the repository root (see docker-compose.yml).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE} AS build
ARG PIP_INSTALL_ARGS=""
COPY images/wheels/ /wheels/
COPY pyproject.toml README.md /app/
# Dependencies first, named in pyproject.toml (cached while only the code changes), then the package.
RUN python3 -c "import tomllib; p = tomllib.load(open('/app/pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['docker']))" > /tmp/requirements.txt \
 && python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir ${PIP_INSTALL_ARGS} -r /tmp/requirements.txt
COPY sandbox_env /app/sandbox_env
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps ${PIP_INSTALL_ARGS} /app

FROM ${BASE_IMAGE}
COPY --from=build /opt/venv /opt/venv
COPY task_repos /app/task_repos
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 PYTHONUNBUFFERED=1 SANDBOX_ENV_TASK_ROOT=/app/task_repos
ARG SOURCE_HASH=unknown
LABEL org.sandbox-env.role="server" org.sandbox-env.source-hash="${SOURCE_HASH}"
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --retries=6 \
  CMD ["python3", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status != 200)"]
CMD ["sandbox-env", "serve", "--mode", "docker", "--host", "0.0.0.0", "--port", "8000"]
