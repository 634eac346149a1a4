"""The vocabulary of the agent work sessions (memory/evaluation/worksessions.py builds them).

One entry per kind of project: its files, tests, components (each with another name a question
can use, so that its words differ from the evidence's), the choices a person makes about
libraries (preferred, avoided, why), the tasks asked for and the errors met. Filler and facts draw
on the same entry, so a session's routine turns name the same files and libraries its facts do.
Standard library only; plain data.
"""

from __future__ import annotations

# fmt: off
PEOPLE = [
    "Priya", "Tomasz", "Aiko", "Mateus", "Grace", "Omar", "Ingrid", "Kwame", "Lucía", "Dmitri",
    "Hannah", "Ravi", "Chloé", "Bongani", "Yuki", "Seo-yeon", "Farah", "Niklas", "Amara", "Joaquín",
    "Eilidh", "Tariq", "Mei", "Oskar", "Zanele", "Ahmed", "Roisin", "Paulo", "Sanna", "Lev"
]
# fmt: on
TEAMS = ["platform", "data", "payments", "growth", "security", "mobile", "SRE", "research", "identity"]
ENVS = ["staging", "production", "dev", "qa", "preprod"]

# (concern, another way to say it, preferred, avoided, why)
# fmt: off
DOMAINS: list[dict] = [
    {
        "kind": "web API",
        "projects": [
            "orders-api", "billing-gateway", "ticketing-service",
        ],
        "lang": "python",
        "files": [
            "app/routes/orders.py", "app/routes/customers.py", "app/models.py", "app/db.py",
            "app/auth/middleware.py", "app/settings.py", "app/services/pricing.py", "app/schemas.py",
            "app/ratelimit.py", "migrations/env.py", "app/webhooks.py",
        ],
        "tests": [
            "tests/test_orders.py", "tests/test_auth.py", "tests/test_pricing.py", "tests/test_webhooks.py",
            "tests/test_pagination.py",
        ],
        "components": [
            ("rate limiter", "request throttling"), ("pagination", "paging of list results"),
            ("auth middleware", "token checking layer"), ("pricing service", "price calculation"),
            ("webhook handler", "callback receiver"), ("order search", "lookup of past purchases"),
        ],
        "choices": [
            ("the HTTP client", "outgoing requests", "httpx", "requests", "we need async calls from the handlers"),
            ("logging", "log output", "structlog", "the stdlib logging module", "JSON lines are easier to grep in Loki"),
            ("validation", "input checking", "pydantic v2", "marshmallow", "the schemas are already pydantic"),
            ("migrations", "schema changes", "alembic", "yoyo-migrations", "autogenerate saves us time"),
            ("task queue", "background jobs", "dramatiq", "celery", "celery's config surface is too big for us"),
            ("date handling", "timestamps and time zones", "pendulum", "arrow", "arrow parsed 'now' differently in tests"),
        ],
        "tasks": [
            "add cursor pagination to the list endpoint", "return 422 with field errors", "cache the price lookup",
            "add an index on orders.created_at", "split the customers router", "tighten the CORS settings",
            "log the request id on every line", "make the webhook handler idempotent",
        ],
        "errors": [
            ("KeyError", "'customer_id'", "app/services/pricing.py"),
            ("sqlalchemy.exc.IntegrityError", "duplicate key value violates unique constraint \"orders_ref_key\"", "app/routes/orders.py"),
            ("TypeError", "can't compare offset-naive and offset-aware datetimes", "app/webhooks.py"),
            ("AttributeError", "'NoneType' object has no attribute 'tenant_id'", "app/auth/middleware.py"),
        ],
        "units": "requests per minute",
    },
    {
        "kind": "data pipeline",
        "projects": [
            "clickstream-etl", "ledger-sync", "warehouse-loader",
        ],
        "lang": "python",
        "files": [
            "pipeline/extract.py", "pipeline/transform.py", "pipeline/load.py", "dags/nightly.py",
            "pipeline/schemas/events.json", "pipeline/dedupe.py", "pipeline/config.yaml",
            "sql/marts/daily_revenue.sql", "pipeline/io/s3.py", "pipeline/quality.py",
        ],
        "tests": [
            "tests/test_transform.py", "tests/test_dedupe.py", "tests/test_quality.py", "tests/test_s3_io.py",
        ],
        "components": [
            ("dedupe step", "removal of repeated records"), ("nightly DAG", "overnight batch"),
            ("S3 loader", "object storage reader"), ("quality checks", "data validation rules"),
            ("revenue mart", "daily income table"), ("schema registry", "catalogue of event layouts"),
        ],
        "choices": [
            ("dataframes", "tabular processing", "polars", "pandas", "pandas blows the container's memory on the big days"),
            ("orchestration", "scheduling jobs", "Dagster", "Airflow", "we want assets, not tasks"),
            ("the file format", "the storage layout on disk", "Parquet", "CSV", "types survive the round trip"),
            ("SQL transforms", "warehouse modelling", "dbt", "hand-written stored procedures", "the analysts already know dbt"),
            ("data validation", "checking rows before load", "pandera", "great_expectations", "great_expectations is too heavy to run in CI"),
            ("S3 access", "reading object storage", "boto3", "s3fs", "s3fs hid retries from us"),
        ],
        "tasks": [
            "partition the output by event date", "make the dedupe step idempotent",
            "add a row-count check before load", "backfill last week's events", "switch the extract to incremental",
            "drop the legacy columns", "add a late-arriving data window", "speed up the revenue mart",
        ],
        "errors": [
            ("KeyError", "'customer_id'", "pipeline/transform.py"),
            ("MemoryError", "Unable to allocate 3.2 GiB for an array", "pipeline/dedupe.py"),
            ("botocore.exceptions.ClientError", "An error occurred (AccessDenied) when calling the GetObject operation", "pipeline/io/s3.py"),
            ("ValueError", "time data '2024-02-30' does not match format '%Y-%m-%d'", "pipeline/extract.py"),
        ],
        "units": "rows per second",
    },
    {
        "kind": "mobile app",
        "projects": [
            "runlog-app", "pantry-mobile", "transit-companion",
        ],
        "lang": "typescript",
        "files": [
            "src/screens/HomeScreen.tsx", "src/screens/SettingsScreen.tsx", "src/api/client.ts",
            "src/store/session.ts", "src/components/MapView.tsx", "src/navigation/index.tsx", "app.json",
            "src/hooks/useSync.ts", "src/i18n/en.json", "ios/Podfile",
        ],
        "tests": [
            "src/__tests__/session.test.ts", "src/__tests__/client.test.ts", "src/__tests__/useSync.test.ts",
            "e2e/login.e2e.ts",
        ],
        "components": [
            ("offline sync", "working without a connection"), ("push notifications", "alerts sent to the phone"),
            ("login screen", "sign-in page"), ("map view", "route display"), ("settings screen", "preferences page"),
            ("image cache", "stored pictures"),
        ],
        "choices": [
            ("state management", "app state", "Zustand", "Redux", "Redux is too much ceremony for three stores"),
            ("navigation", "moving between screens", "React Navigation", "react-native-navigation", "the native one broke on every upgrade"),
            ("the HTTP client", "network calls", "fetch with a small wrapper", "axios", "one less dependency"),
            ("styling", "look and layout", "StyleSheet objects", "styled-components", "styled-components slowed the list screens"),
            ("local storage", "keeping data on the device", "MMKV", "AsyncStorage", "AsyncStorage was slow on older Androids"),
            ("testing", "running tests", "Jest with Testing Library", "Enzyme", "Enzyme is unmaintained"),
        ],
        "tasks": [
            "fix the keyboard covering the login button", "add pull-to-refresh on the home list",
            "retry failed syncs with backoff", "support dark mode in settings", "lazy-load the map tiles",
            "add the German translation", "cache avatars on disk", "show a banner when offline",
        ],
        "errors": [
            ("TypeError", "undefined is not an object (evaluating 'route.params.id')", "src/screens/HomeScreen.tsx"),
            ("Invariant Violation", "Text strings must be rendered within a <Text> component", "src/components/MapView.tsx"),
            ("Error", "Network request failed", "src/api/client.ts"),
            ("RangeError", "Maximum call stack size exceeded", "src/hooks/useSync.ts"),
        ],
        "units": "frames per second",
    },
    {
        "kind": "infrastructure",
        "projects": [
            "platform-infra", "edge-cluster", "shared-terraform",
        ],
        "lang": "hcl",
        "files": [
            "modules/vpc/main.tf", "modules/eks/main.tf", "envs/staging/main.tf", "envs/production/main.tf",
            "charts/api/values.yaml", "charts/api/templates/deployment.yaml", ".github/workflows/deploy.yml",
            "modules/rds/variables.tf", "scripts/rotate-certs.sh", "monitoring/alerts.yaml",
        ],
        "tests": [
            "tests/vpc_test.go", "tests/eks_test.go", "policy/terraform.rego",
        ],
        "components": [
            ("ingress controller", "edge traffic router"), ("node autoscaler", "cluster sizing"),
            ("certificate renewal", "TLS cert rotation"), ("database backups", "snapshots of the data store"),
            ("alerting rules", "paging conditions"), ("deploy pipeline", "release workflow"),
        ],
        "choices": [
            ("ingress", "the edge proxy", "ingress-nginx", "Traefik", "the team already debugs nginx configs"),
            ("secrets", "credential storage", "External Secrets with AWS Secrets Manager", "sealed-secrets", "rotation must not need a commit"),
            ("CI", "build automation", "GitHub Actions", "Jenkins", "nobody wants to patch the Jenkins box"),
            ("Terraform state", "keeping the infra state", "an S3 backend with DynamoDB locking", "Terraform Cloud", "we keep state in our own account"),
            ("metrics", "monitoring", "Prometheus with Grafana", "Datadog", "the Datadog bill doubled last quarter"),
            ("container builds", "image building", "BuildKit", "kaniko", "kaniko's cache misses were slow"),
        ],
        "tasks": [
            "move the RDS instance to gp3 storage", "add a PodDisruptionBudget for the API",
            "split the staging VPC subnets", "pin the Helm chart versions", "alert on certificate expiry",
            "enable IRSA for the worker", "drop the unused NAT gateway", "tag every resource with a cost centre",
        ],
        "errors": [
            ("Error", "creating EKS Node Group: InvalidParameterException: Subnets are not tagged", "modules/eks/main.tf"),
            ("Error", "x509: certificate has expired or is not yet valid", "scripts/rotate-certs.sh"),
            ("Error", "Error acquiring the state lock: ConditionalCheckFailedException", "envs/staging/main.tf"),
            ("CrashLoopBackOff", "Back-off restarting failed container api in pod api-7d9f", "charts/api/templates/deployment.yaml"),
        ],
        "units": "requests per second",
    },
    {
        "kind": "ML training",
        "projects": [
            "churn-model", "doc-classifier", "speech-tagger",
        ],
        "lang": "python",
        "files": [
            "train.py", "configs/base.yaml", "data/loader.py", "models/encoder.py", "eval/metrics.py",
            "scripts/sweep.sh", "data/augment.py", "models/head.py", "notebooks/error_analysis.ipynb",
        ],
        "tests": [
            "tests/test_loader.py", "tests/test_metrics.py", "tests/test_encoder.py",
        ],
        "components": [
            ("data loader", "batch feeding code"), ("learning rate schedule", "step size plan"),
            ("evaluation script", "scoring of checkpoints"), ("augmentation", "synthetic variations of samples"),
            ("checkpointing", "code that saves model weights"), ("mixed precision", "half-float training"),
        ],
        "choices": [
            ("experiment tracking", "logging runs", "MLflow", "Weights & Biases", "the data may not leave our network"),
            ("config", "hyper-parameter files", "Hydra", "argparse flags", "sweeps need overrides"),
            ("the training loop", "the code that drives training", "plain PyTorch", "PyTorch Lightning", "Lightning hid the gradient accumulation bug"),
            ("the tokenizer", "text splitting", "the Hugging Face tokenizers crate", "NLTK", "NLTK is far too slow"),
            ("the optimizer", "updating weights", "AdamW", "SGD with momentum", "AdamW converged in half the steps"),
            ("the data format", "storing samples", "WebDataset shards", "one JSON file per sample", "the file count killed the NFS"),
        ],
        "tasks": [
            "add gradient clipping", "log the confusion matrix", "resume from the last checkpoint",
            "balance the classes in the sampler", "add early stopping", "profile the data loader",
            "evaluate on the held-out month", "export the model to ONNX",
        ],
        "errors": [
            ("RuntimeError", "CUDA out of memory. Tried to allocate 2.00 GiB", "train.py"),
            ("ValueError", "Expected input batch_size (32) to match target batch_size (31)", "models/head.py"),
            ("FileNotFoundError", "[Errno 2] No such file or directory: 'ckpt/last.pt'", "train.py"),
            ("RuntimeError", "DataLoader worker (pid 4121) is killed by signal: Killed", "data/loader.py"),
        ],
        "units": "samples per second",
    },
    {
        "kind": "CLI tool",
        "projects": [
            "logtail", "dotsync", "releasebot",
        ],
        "lang": "go",
        "files": [
            "cmd/root.go", "cmd/sync.go", "internal/config/config.go", "internal/fsutil/walk.go",
            "internal/output/table.go", "main.go", "go.mod", "internal/remote/client.go", "Makefile",
        ],
        "tests": [
            "internal/config/config_test.go", "internal/fsutil/walk_test.go", "cmd/sync_test.go",
        ],
        "components": [
            ("config loader", "settings file reader"), ("progress bar", "status indicator"),
            ("file walker", "directory traversal"), ("table output", "columnar printing"),
            ("remote client", "server connection code"), ("shell completion", "tab suggestions"),
        ],
        "choices": [
            ("argument parsing", "parsing flags", "cobra", "urfave/cli", "subcommands and completion come for free"),
            ("the config format", "the settings file syntax", "TOML", "YAML", "YAML's implicit types bit a user"),
            ("logging", "diagnostic output", "log/slog", "logrus", "logrus is in maintenance mode"),
            ("releases", "publishing binaries", "GoReleaser", "a hand-written Makefile target", "it signs and builds every platform"),
            ("testing", "assertions", "the standard testing package with go-cmp", "testify", "testify's diffs are hard to read"),
            ("colours", "terminal styling", "lipgloss", "fatih/color", "we want one style system"),
        ],
        "tasks": [
            "add a --dry-run flag", "respect NO_COLOR", "print a summary table at the end",
            "follow symlinks only when asked", "read the config from XDG_CONFIG_HOME",
            "add shell completion for zsh", "exit with code 2 on usage errors",
            "stream the remote output instead of buffering",
        ],
        "errors": [
            ("panic", "runtime error: invalid memory address or nil pointer dereference", "internal/remote/client.go"),
            ("error", "open /home/ci/.config/tool/config.toml: no such file or directory", "internal/config/config.go"),
            ("fatal error", "concurrent map writes", "internal/fsutil/walk.go"),
            ("error", "toml: line 7: expected '.' or '=', but got '\\n' instead", "internal/config/config.go"),
        ],
        "units": "files per second",
    },
    {
        "kind": "frontend web app",
        "projects": [
            "admin-console", "support-dashboard", "booking-portal",
        ],
        "lang": "typescript",
        "files": [
            "src/pages/Users.tsx", "src/pages/Billing.tsx", "src/components/DataTable.tsx", "src/lib/api.ts",
            "src/hooks/useAuth.ts", "vite.config.ts", "src/styles/theme.css", "src/routes.tsx",
            "src/components/DatePicker.tsx", "package.json",
        ],
        "tests": [
            "src/components/DataTable.test.tsx", "src/hooks/useAuth.test.ts", "tests/e2e/billing.spec.ts",
        ],
        "components": [
            ("data table", "grid of records"), ("date picker", "calendar input"), ("auth hook", "login state code"),
            ("billing page", "invoices screen"), ("theme", "colours and fonts"), ("bundle", "shipped JavaScript"),
        ],
        "choices": [
            ("data fetching", "server state", "TanStack Query", "SWR", "we need mutations with rollback"),
            ("forms", "form handling", "react-hook-form", "Formik", "Formik re-renders every field on each keystroke"),
            ("styling", "CSS", "CSS modules", "Tailwind", "the designers hand us plain CSS"),
            ("dates", "handling calendar values", "date-fns", "moment", "moment is huge and mutable"),
            ("e2e tests", "browser tests", "Playwright", "Cypress", "Playwright runs the three browsers"),
            ("the bundler", "building the bundle", "Vite", "webpack", "cold starts went from 40 s to 2 s"),
        ],
        "tasks": [
            "virtualise the users table", "add CSV export to billing", "debounce the search box",
            "fix the date picker in Safari", "code-split the admin routes", "show a skeleton while loading",
            "add keyboard shortcuts to the table", "remove the unused lodash imports",
        ],
        "errors": [
            ("TypeError", "Cannot read properties of undefined (reading 'map')", "src/components/DataTable.tsx"),
            ("Error", "Hydration failed because the initial UI does not match what was rendered on the server", "src/pages/Users.tsx"),
            ("SyntaxError", "Unexpected token '<', \"<!doctype \"... is not valid JSON", "src/lib/api.ts"),
            ("Error", "Too many re-renders. React limits the number of renders", "src/hooks/useAuth.ts"),
        ],
        "units": "page loads per second",
    },
    {
        "kind": "game backend",
        "projects": [
            "matchmaker", "leaderboard-svc", "lobby-server",
        ],
        "lang": "go",
        "files": [
            "internal/match/queue.go", "internal/match/rating.go", "internal/store/redis.go", "cmd/server/main.go",
            "internal/ws/hub.go", "internal/lobby/lobby.go", "deploy/server.yaml", "internal/anticheat/rules.go",
            "proto/lobby.proto",
        ],
        "tests": [
            "internal/match/queue_test.go", "internal/match/rating_test.go", "internal/ws/hub_test.go",
        ],
        "components": [
            ("matchmaking queue", "player pairing"), ("rating system", "skill scores"),
            ("websocket hub", "live connection fan-out"), ("lobby", "pre-game room"),
            ("anti-cheat rules", "cheating detection"), ("leaderboard", "ranking of top players"),
        ],
        "choices": [
            ("storage", "keeping match state", "Redis", "Postgres", "we need sorted sets for the ladder"),
            ("rating", "the skill formula", "Glicko-2", "Elo", "Elo moved new players too slowly"),
            ("RPC", "service-to-service calls", "gRPC", "JSON over HTTP", "the payloads are hot and typed"),
            ("websockets", "live connections", "nhooyr/websocket", "gorilla/websocket", "gorilla was archived for a while"),
            ("metrics", "telemetry", "OpenTelemetry", "statsd", "one pipeline for traces and metrics"),
            ("load testing", "stress testing", "k6", "Locust", "k6 scripts live next to the code"),
        ],
        "tasks": [
            "widen the rating window after 30 s in queue", "shard the hub by region", "add a ping-based region pick",
            "expire idle lobbies", "batch the leaderboard writes", "kick players on repeated desync",
            "add a reconnect grace period", "log match outcomes for the data team",
        ],
        "errors": [
            ("panic", "send on closed channel", "internal/ws/hub.go"),
            ("error", "redis: connection pool timeout", "internal/store/redis.go"),
            ("fatal error", "all goroutines are asleep - deadlock!", "internal/match/queue.go"),
            ("error", "rpc error: code = DeadlineExceeded desc = context deadline exceeded", "internal/lobby/lobby.go"),
        ],
        "units": "matches per minute",
    },
]
# fmt: on

SMALL_TALK_USER = [
    "how's it going?",
    "ok, carry on",
    "nice, thanks",
    "grabbing a coffee, keep going",
    "any news?",
    "great, that was quick",
    "cool. what's next on your list?",
    "sorry, was in a meeting. where are we?",
    "ping me when CI is green",
    "looks good to me",
    "hmm ok",
    "sounds fine",
    "thanks, that helps",
    "back now. status?",
    "let's keep going",
    "can you summarise where we are?",
    "perfect",
]
SMALL_TALK_ASSISTANT = [
    "Still on it; about halfway through.",
    "Done with that part. Moving on to the tests.",
    "No blockers so far.",
    "CI is running; I'll report when it finishes.",
    "Everything is green locally.",
    "I'm reading the surrounding code before changing anything.",
    "That part was simpler than it looked.",
    "I'll keep the change small so it's easy to review.",
]
