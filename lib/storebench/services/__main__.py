"""python -m storebench.services {start,stop,status,version,wipe} SYSTEM [--location memory|disk]

SYSTEM: redis, cassandra, minio, mongodb-ferretdb (or ferretdb), ceph, or "all"; also toxiproxy.
``start`` leaves the server running after the command exits (prints its endpoint as JSON);
``stop`` stops it by its pidfile; ``version`` asks a running server (or starts one briefly).
Work dir: --workdir, else $STOREBENCH_WORK/services, else <repo>/work/services.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from storebench.services import ALIASES, LOCAL_SERVICES, NETWORK_SERVICES, ServiceError, local_service
from storebench.paths import services_dir


def _services(args) -> list:
    names = list(LOCAL_SERVICES) if args.system == "all" else [ALIASES.get(args.system, args.system)]
    out = []
    for name in names:
        if args.port is None and args.command in ("stop", "status", "version", "wipe"):
            # every instance of this system that has a pidfile in the work dir
            pidfiles = sorted((args.workdir / name).glob(f"{name}-*.pid"))
            ports = [int(p.stem.rsplit("-", 1)[1]) for p in pidfiles if p.stem.rsplit("-", 1)[1].isdigit()]
            if ports:
                for port in ports:
                    state = json.loads((args.workdir / name / f"{name}-{port}.pid").read_text() or "{}")
                    out.append(local_service(name, args.workdir, state.get("location", args.location), port))
                continue
        out.append(local_service(name, args.workdir, args.location, args.port))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m storebench.services", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["start", "stop", "status", "version", "wipe"])
    ap.add_argument("system", help=f"one of: {', '.join([*LOCAL_SERVICES, *NETWORK_SERVICES])}, all")
    ap.add_argument("--location", choices=["memory", "disk"], default="disk")
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args(argv)
    args.workdir = (args.workdir or services_dir()).resolve()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.system != "all" and ALIASES.get(args.system, args.system) not in {**LOCAL_SERVICES, **NETWORK_SERVICES}:
        ap.error(f"unknown system {args.system!r}; valid: {', '.join([*LOCAL_SERVICES, *NETWORK_SERVICES])}, all")
    status = 0
    for svc in _services(args):
        try:
            if args.command == "start":
                svc.start(detach=True)
                print(json.dumps({"system": svc.system, "location": svc.location,
                                  "startup_seconds": round(svc.startup_seconds, 3),
                                  "pids": svc.pids(), "version": svc.version(),
                                  "endpoint": svc.endpoint(), "log": str(svc.log_file)}, indent=1))
            elif args.command == "stop":
                pids = svc.pids()
                svc.stop()
                print(f"{svc.name}: stopped {pids}" if pids else f"{svc.name}: not running")
            elif args.command == "wipe":
                svc.wipe()
                print(f"{svc.name}: stopped and wiped {svc.data_dir}")
            elif args.command == "status":
                pids = svc.pids()
                if pids:
                    print(f"{svc.name}: running ({svc.location}), pids {pids}, "
                          f"rss {svc.rss_bytes() / 2**20:.0f} MiB, data {svc.data_dir}, log {svc.log_file}")
                else:
                    print(f"{svc.name}: not running")
                    status = max(status, 3)
            elif args.command == "version":
                if svc.pids():
                    print(f"{svc.system}: {svc.version()}")
                else:
                    with svc:
                        print(f"{svc.system}: {svc.version()}")
        except ServiceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
