"""A small realistic store of recorded tool failures and what a person types to find each one.

The lessons list's search is measured on it (docs/lessons-and-notes.md, "Searching the list"):
each query names the records a person means by it; any of them listed first counts.
"""

from __future__ import annotations

# (name, tool, error, action): as agents record them, the error as the tool printed it.
FAILURES = [
    (
        "npm_eacces",
        "npm",
        "npm ERR! code EACCES\nnpm ERR! syscall mkdir\nnpm ERR! path /usr/local/lib/node_modules/typescript\nnpm ERR! Error: EACCES: permission denied, mkdir '/usr/local/lib/node_modules/typescript'",
        "npm config set prefix ~/.npm-global and add ~/.npm-global/bin to PATH",
    ),
    (
        "merge_conflict",
        "git",
        "CONFLICT (content): Merge conflict in src/app.py\nAutomatic merge failed; fix conflicts and then commit the result.",
        "edit the markers in src/app.py, git add src/app.py, git commit",
    ),
    (
        "push_rejected",
        "git",
        "! [rejected]        main -> main (non-fast-forward)\nerror: failed to push some refs to 'origin'",
        "git pull --rebase origin main, then push",
    ),
    (
        "not_a_repo",
        "git",
        "fatal: not a git repository (or any of the parent directories): .git",
        "cd into the checkout first",
    ),
    (
        "pip_resolution",
        "pip",
        "ERROR: Cannot install requests==2.25.1 and urllib3==2.0.4 because these package versions have conflicting dependencies.\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/",
        "pin urllib3<2 in requirements.txt",
    ),
    ("disk_full", "bash", "No space left on device", "docker system prune -af"),
    (
        "oom_killed",
        "bash",
        "Killed: process 4127 (python train.py) exited with code 137 (OOMKilled)",
        "halve the batch size, or raise the container's memory limit to 8g",
    ),
    (
        "java_heap",
        "gradle",
        "java.lang.OutOfMemoryError: Java heap space",
        "org.gradle.jvmargs=-Xmx4g in gradle.properties",
    ),
    (
        "port_in_use",
        "node",
        "Error: listen EADDRINUSE: address already in use :::3000",
        "lsof -ti:3000 | xargs kill",
    ),
    (
        "ssl_verify",
        "python",
        "requests.exceptions.SSLError: HTTPSConnectionPool(host='api.internal.example', port=443): Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate')))",
        "export REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt",
    ),
    (
        "dns",
        "curl",
        "curl: (6) Could not resolve host: registry.internal.example",
        "add the VPN's nameserver to /etc/resolv.conf",
    ),
    ("script_permission", "bash", "bash: ./deploy.sh: Permission denied", "chmod +x deploy.sh"),
    (
        "docker_socket",
        "docker",
        "Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock",
        "sudo usermod -aG docker $USER, then log in again",
    ),
    ("ssh_publickey", "ssh", "git@github.com: Permission denied (publickey).", "ssh-add ~/.ssh/id_ed25519"),
    (
        "read_timeout",
        "http_get",
        "httpx.ReadTimeout: The read operation timed out",
        "pass timeout=60 to the client",
    ),
    (
        "pg_refused",
        "psql",
        'psql: error: connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused',
        "brew services start postgresql@16",
    ),
    ("no_module", "python", "ModuleNotFoundError: No module named 'yaml'", "pip install pyyaml"),
    (
        "json_decode",
        "python",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        "check the response status before calling .json()",
    ),
    (
        "unicode",
        "python",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        "open the file with encoding='utf-16'",
    ),
    (
        "rate_limit",
        "http_get",
        "HTTP 429 Too Many Requests: rate limit exceeded, retry after 30 seconds",
        "back off exponentially from 2 s",
    ),
    (
        "shared_lib",
        "bash",
        "error while loading shared libraries: libssl.so.1.1: cannot open shared object file: No such file or directory",
        "apt-get install libssl1.1",
    ),
    (
        "make_target",
        "make",
        "make: *** No rule to make target 'build'.  Stop.",
        "run make from the repository root",
    ),
    (
        "image_pull",
        "kubectl",
        'Failed to pull image "registry.example/api:1.4": rpc error: code = Unknown desc = failed to resolve reference: unauthorized: authentication required',
        "create the regcred pull secret",
    ),
    (
        "segfault",
        "bash",
        "Segmentation fault (core dumped)",
        "rebuild the C extension against the installed numpy",
    ),
]

# What a person types, and the records that answer it (any of them first is right).
QUERIES = {
    "disk": {"disk_full"},
    "disk full": {"disk_full"},
    "space": {"disk_full"},
    "storage": {"disk_full"},
    "memory": {"oom_killed", "java_heap"},
    "out of memory": {"oom_killed", "java_heap"},
    "killed": {"oom_killed"},
    "port": {"port_in_use"},
    "address in use": {"port_in_use"},
    "port taken": {"port_in_use"},
    "certificate": {"ssl_verify"},
    "ssl": {"ssl_verify"},
    "merge": {"merge_conflict"},
    "merge conflict": {"merge_conflict"},
    "dependency conflict": {"pip_resolution"},
    "dns": {"dns"},
    "hostname lookup": {"dns"},
    "permission denied": {"npm_eacces", "script_permission", "docker_socket", "ssh_publickey"},
    "timeout": {"read_timeout"},
    "timed out": {"read_timeout"},
    "push rejected": {"push_rejected"},
    "missing module": {"no_module"},
    "import error": {"no_module"},
    "rate limit": {"rate_limit"},
    "throttled": {"rate_limit"},
    "encoding": {"unicode"},
    "ssh key": {"ssh_publickey"},
    "database connection": {"pg_refused"},
    "postgres": {"pg_refused"},
    "heap": {"java_heap"},
    "crash": {"segfault"},
    "json": {"json_decode"},
}

# Nothing recorded answers these: whatever they list is unrelated.
UNANSWERED = [
    "gpu driver",
    "css layout",
    "leap year",
    "invoice",
    "translation",
    "screenshot",
    "cors",
    "deadlock",
    "webpack",
    "null pointer",
    "migration",
    "cron",
    "locale",
    "unit tests",
]
