# storebench in a container: the same env/ scripts as on a host, nothing new.
#   podman build --isolation chroot -t storebench .
#   podman --runtime runc run --rm storebench make test
FROM debian:bookworm

ENV DEBIAN_FRONTEND=noninteractive \
    STOREBENCH_CACHE=/root/.cache/storebench \
    LANG=C.UTF-8
# make and python3 to run env/setup.sh; it installs everything else it needs.
RUN apt-get update && apt-get install -y --no-install-recommends make python3 python3-venv ca-certificates git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /storebench
COPY env/ env/
COPY pyproject.toml README.md ./
COPY lib/ lib/
RUN bash env/setup.sh
COPY . .
RUN git config --global --add safe.directory /storebench && (git rev-parse HEAD >/dev/null 2>&1 || \
    (git init -q && git add -A && git -c user.name=storebench -c user.email=storebench@localhost commit -qm image))

CMD ["make", "reproduce"]
