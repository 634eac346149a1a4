"""`manage.py serve [ADDR:PORT]`: the production web server and a Celery worker, as one command.

The web server is uvicorn serving ottoweb/asgi.py: Django, MCP at /mcp and the static files in one
process (README "Production server"). Both are child processes; Ctrl-C (or SIGTERM) stops both
cleanly, and if either dies the other is stopped too, so `make run` never leaves a half-running
system behind.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def web_command(addrport: str, *, workers: int | None = None) -> list[str]:
    """The production web server's command line (also what `manage.py bench` and the live tests start).

    uvicorn runs Django's sync views a thread each and the MCP endpoint on its event loop; OTTO_WEB_WORKERS
    processes (default 1) share the port. Graceful shutdown waits at most 10 s for requests in flight.
    """
    host, _, port = addrport.rpartition(":")
    if not host and port.isdigit():
        host = "127.0.0.1"  # a port alone listens on loopback only, as runserver's does
    if not host or not port.isdigit():
        raise CommandError(f"{addrport!r} is not ADDR:PORT or PORT")
    command = [sys.executable, "-m", "uvicorn", "ottoweb.asgi:application", "--host", host.strip("[]")]
    command += ["--port", port, "--lifespan", "on", "--timeout-graceful-shutdown", "10"]
    # uvicorn closes an idle kept-alive connection after 5 s; a client (or proxy) that pauses between
    # requests longer would find it gone. 75 s outlasts the usual 60 s of proxies and client pools.
    command += ["--timeout-keep-alive", "75"]
    count = workers if workers is not None else settings.OTTO_WEB_WORKERS
    if count > 1:
        command += ["--workers", str(count)]
    return command


def runserver_command(addrport: str) -> list[str]:
    """Django's development server (ours, with TCP_NODELAY) without the reloader: one process, pid known.

    What the live tests start by default and `manage.py bench` with OTTO_BENCH_SERVER=runserver.
    """
    return [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "runserver", addrport, "--noreload"]


def worker_command(*, concurrency: int = 2, name: str | None = None) -> list[str]:
    """The Celery worker's command line (also what `manage.py bench` and the live tests start).

    `--pool threads` keeps it one process; gossip, mingle and heartbeat are off. `name` is Celery's
    `-n` node name, for several workers on one broker.
    """
    command = [sys.executable, "-m", "celery", "-A", "ottoweb", "worker", "-l", "info", "--pool", "threads"]
    command += ["--concurrency", str(concurrency), "--without-gossip", "--without-mingle"]
    command += ["--without-heartbeat"]
    if name is not None:
        command += ["-n", name]
    return command


class Command(BaseCommand):
    help = "Serve the web app and run a Celery worker beside it."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-worker", action="store_true")

    def handle(self, *args, addrport: str, no_worker: bool, **options):
        children = [subprocess.Popen(web_command(addrport), cwd=settings.BASE_DIR)]
        if not no_worker:
            children.append(subprocess.Popen(worker_command(concurrency=2)))
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping and all(c.poll() is None for c in children):
            time.sleep(0.3)
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
        self.stdout.write("stopped")
