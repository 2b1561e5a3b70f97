# Sandbox runner: Python 3.11, torch 2.13.0 CPU, numpy, pytest, g++ (torch.compile's inductor), user 1000.
# Online default: official slim Python + the PyTorch CPU wheel index. Offline (no registry):
#   --build-arg BASE_IMAGE=sandbox-env-base:bookworm
#   --build-arg PIP_INSTALL_ARGS="--no-index --find-links /wheels"   (wheels in images/wheels/)
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE} AS build
ARG PIP_INSTALL_ARGS="--index-url https://download.pytorch.org/whl/cpu --extra-index-url https://pypi.org/simple"
# sandbox_env/images.py WHEEL_SPECS passes the same list (one place for what agent code runs with)
ARG RUNNER_PACKAGES="torch==2.13.0 numpy pytest==9.2.0"
COPY wheels/ /wheels/
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir ${PIP_INSTALL_ARGS} ${RUNNER_PACKAGES} \
 && rm -rf /wheels

FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ procps util-linux coreutils \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 --shell /bin/bash sandbox \
 && mkdir -p /workspace /checks && chown 1000:1000 /workspace
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    GLOO_SOCKET_IFNAME= TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
ARG SOURCE_HASH=unknown
LABEL org.sandbox-env.role="runner" org.sandbox-env.torch="2.13.0" org.sandbox-env.source-hash="${SOURCE_HASH}"
USER 1000
WORKDIR /workspace
CMD ["python3"]
