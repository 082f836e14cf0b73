# storebench in a container: the same env/ scripts as on a host, nothing new.
#   podman build --isolation chroot -t storebench .      (behind a TLS-intercepting proxy: see env/ca/)
#   podman --runtime runc run --rm --shm-size=4g --cap-add NET_ADMIN,SYS_ADMIN \
#       -v ../shared/datasets:/datasets:ro storebench make test
# (--shm-size: the `memory` location lives on /dev/shm; the capabilities: the breakdown's network
# namespace; /datasets: the offline CIFAR-10 mirror)
FROM debian:bookworm

ENV DEBIAN_FRONTEND=noninteractive \
    STOREBENCH_CACHE=/root/.cache/storebench \
    STOREBENCH_DATASETS_MIRROR=/datasets \
    LANG=C.UTF-8
# make and python3 to run env/setup.sh; it installs everything else it needs. env/ca/: extra CA
# certificates for networks that intercept TLS (git-ignored; see env/ca/README.md).
COPY env/ca/ /usr/local/share/ca-certificates/
RUN apt-get update && apt-get install -y --no-install-recommends make python3 python3-venv ca-certificates git \
    && update-ca-certificates && rm -rf /var/lib/apt/lists/*

WORKDIR /storebench
# The servers first (slowest layer, changes least): Redis, Cassandra, MinIO, FerretDB, Ceph.
# (env/conf/ is not needed to install them: it comes with env/ below, so editing a config
# template does not rebuild this layer.)
COPY env/lib.sh env/
COPY env/servers/ env/servers/
RUN bash env/servers/install-all.sh
# The Python environment (venv, locked deps, the package, the Jupyter kernel, rados in the venv).
COPY env/ env/
COPY pyproject.toml README.md ./
COPY lib/ lib/
RUN bash env/setup.sh
COPY . .
# Store and server data on the host's file system, not the image's overlay (page-cache eviction
# for disk-cold needs a real file system under the files).
VOLUME /storebench/work
RUN git config --global --add safe.directory /storebench && (git rev-parse HEAD >/dev/null 2>&1 || \
    (git init -q && git add -A && git -c user.name=storebench -c user.email=storebench@localhost commit -qm image))

CMD ["make", "reproduce"]
