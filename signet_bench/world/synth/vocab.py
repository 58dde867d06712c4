"""Readable English domain vocabularies: the topics synthetic memories, prompts and embeddings
are made of.

A topic is three word lists (tools, objects, actions) so templates can form sentences such as
"Decided to use pgbouncer for the replica because the planner was too slow". Every word is one
lower-case token of `[a-z0-9]` (no hyphens), so FTS5's tokenizer, the hash-trick tokenizer and
`TopicEmbedder` all see the same words. Content words are (almost) unique to one topic, which is
what makes a topic's words a precise FTS5 query.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "GENERIC_WORDS",
    "GLOBAL_TOPIC",
    "TIME_WORDS",
    "TOPICS",
    "Topic",
    "get_topic",
]


@dataclass(frozen=True, slots=True)
class Topic:
    """A named vocabulary: tools (proper nouns), objects (nouns) and actions (verbs)."""

    name: str
    domain: str
    tools: tuple[str, ...]
    objects: tuple[str, ...]
    actions: tuple[str, ...]

    @property
    def words(self) -> tuple[str, ...]:
        """All content words of the topic, tools first."""
        return self.tools + self.objects + self.actions


def _words(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(text.split()))


def _t(name: str, domain: str, tools: str, objects: str, actions: str) -> Topic:
    return Topic(name, domain, _words(tools), _words(objects), _words(actions))


_ALL: tuple[Topic, ...] = (
    _t(
        "postgres",
        "databases",
        "postgres pgbouncer psql pgvector timescale citus patroni pgadmin",
        "index vacuum replica schema tablespace planner sequence transaction deadlock partition "
        "trigger jsonb replication foreignkey isolation rowlock",
        "analyze reindex backfill denormalize explain truncate replicate upsert",
    ),
    _t(
        "sqlite",
        "databases",
        "sqlite litestream datasette sqlcipher libsql turso drizzle kysely",
        "journal pragma wal busytimeout blob rowid savepoint pagecache tombstone fts5 "
        "virtualtable dbfile writelock integrity freelist mmap",
        "attach compact checkpoint restore snapshot fsync serialize repair",
    ),
    _t(
        "caching",
        "databases",
        "redis memcached varnish valkey dragonfly keydb fastly squid",
        "ttl eviction keyspace hitrate stampede lru warmup invalidation hotkey cachekey "
        "staleness sentinel pubsub keyprefix expiry cachemiss",
        "evict invalidate prewarm memoize expire purge flush preload",
    ),
    _t(
        "search",
        "databases",
        "elasticsearch opensearch meilisearch typesense lucene tantivy vespa solr",
        "bm25 tokenizer analyzer shard posting relevance synonym stemmer facet reranker "
        "ranking snippet highlighter querylog recall precision",
        "tokenize stem rerank boost highlight autocomplete crawl dedupe",
    ),
    _t(
        "ui_components",
        "frontend",
        "react svelte radix storybook shadcn vite solidjs preact",
        "button modal dropdown tooltip sidebar navbar form carousel datepicker avatar badge "
        "toast accordion datagrid popover breadcrumb",
        "render mount hydrate rerender animate focus dismiss toggle",
    ),
    _t(
        "styling",
        "frontend",
        "tailwind sass postcss stylelint emotion vanillaextract cssmodules lightningcss",
        "breakpoint palette typography spacing opacity flexbox grid darkmode shadow margin "
        "padding font theme designtoken keyframe viewport",
        "restyle align center tint override rescale darken lighten",
    ),
    _t(
        "state",
        "frontend",
        "redux zustand mobx jotai xstate recoil pinia tanstack",
        "reducer selector atom signal slice dispatcher devtools statetree subscription "
        "hydration querykey effect mutation computed observable undostack",
        "dispatch subscribe derive persist normalize rehydrate reset batch",
    ),
    _t(
        "editor",
        "frontend",
        "monaco codemirror treesitter lsp prosemirror xterm tauri electron",
        "cursor keybinding gutter minimap buffer syntax completion diagnostics splitpane "
        "filetree statusbar commandbar selection decoration folding scrollback",
        "fold indent reformat refactor rename navigate select wrap",
    ),
    _t(
        "auth",
        "auth",
        "oauth jwt auth0 clerk keycloak okta passkey webauthn",
        "token cookie refreshtoken login signup password mfa callback scope claim issuer "
        "nonce redirect csrf identity otp",
        "authenticate authorize revoke signin logout verify impersonate reissue",
    ),
    _t(
        "permissions",
        "auth",
        "casbin opa rego zanzibar spicedb cerbos oso permitio",
        "role policy grant tenant acl rbac abac membership ownership resource principal "
        "capability entitlement admin moderator usergroup",
        "allow deny delegate inherit escalate assign restrict audit",
    ),
    _t(
        "ci",
        "cicd",
        "githubactions circleci buildkite jenkins dagger earthly turborepo nx",
        "workflow runner artifact matrix buildcache stage checkrun yaml envvar pullrequest "
        "mergequeue flake buildlog pipeline cron monorepo",
        "build lint retry bisect merge rebase parallelize gate",
    ),
    _t(
        "deploy",
        "cicd",
        "vercel flyio netlify railway heroku argocd spinnaker ansible",
        "release rollout rollback canary staging production hotfix changelog semver "
        "releasetag bluegreen healthcheck downtime environment preview cutover",
        "deploy ship promote revert publish bump hotpatch announce",
    ),
    _t(
        "unit_tests",
        "testing",
        "pytest vitest jest hypothesis mocha junit nextest coverage",
        "fixture assertion mock testcase testsuite stub spy regression doctest conftest "
        "teardown golden oracle tolerance edgecase testdouble",
        "assert parametrize fake isolate rerun xfail skip shrink",
    ),
    _t(
        "e2e_tests",
        "testing",
        "playwright cypress selenium puppeteer webdriver testcafe browserstack chromatic",
        "locator screenshot trace browser headless page testid iframe userflow scenario "
        "video timeout visualdiff smoketest recording storagestate",
        "click fill record replay wait hover scroll intercept",
    ),
    _t(
        "payments",
        "billing",
        "stripe paddle braintree adyen paypal plaid lemonsqueezy chargebee",
        "checkout webhook refund chargeback dispute coupon trial price customer "
        "paymentintent card payout currency dunning proration paywall",
        "charge capture prorate upgrade downgrade cancel renew settle",
    ),
    _t(
        "invoicing",
        "billing",
        "quickbooks xero avalara taxjar netsuite freshbooks zuora pdfkit",
        "invoice receipt vat salestax ledger lineitem creditnote taxrate fiscalyear "
        "accountant discount duedate remittance purchaseorder statement billingaddress",
        "reconcile issue void accrue itemize remit bill credit",
    ),
    _t(
        "kubernetes",
        "infra",
        "kubernetes helm kubectl k3s kustomize karpenter istio containerd",
        "pod replicaset node namespace ingress configmap daemonset statefulset cronjob "
        "autoscaler cluster initcontainer volume manifest taint kubelet",
        "cordon drain autoscale redeploy apply provision containerize orchestrate",
    ),
    _t(
        "networking",
        "infra",
        "nginx caddy cloudflare traefik haproxy wireguard tailscale envoy",
        "dns tls certificate proxy loadbalancer firewall subnet vpn latency port cors "
        "websocket http2 ratelimit gateway cidr",
        "route resolve terminate forward tunnel throttle allowlist ping",
    ),
    _t(
        "observability",
        "infra",
        "grafana prometheus datadog sentry opentelemetry loki jaeger honeycomb",
        "metric dashboard alert span logs histogram slo pager incident runbook errorrate "
        "p99 uptime exporter cardinality heartbeat",
        "instrument monitor notify sample scrape correlate triage silence",
    ),
    _t(
        "model_training",
        "ml",
        "pytorch jax wandb lightning huggingface optuna tensorboard deepspeed",
        "epoch minibatch gradient learningrate optimizer weights loss overfitting dropout "
        "dataset validation hyperparameter lora earlystopping gpu accuracy",
        "train finetune evaluate regularize quantize distill sweep converge",
    ),
    _t(
        "embeddings",
        "ml",
        "ollama nomic openai faiss sentencetransformers wordllama hnswlib qdrant",
        "vector cosine dimension centroid chunk similarity neighbor matryoshka "
        "embeddingmodel projection clustering unitnorm quantization chunker hnsw dotproduct",
        "embed vectorize retrieve reembed downproject pool batchembed threshold",
    ),
    _t(
        "prompting",
        "ml",
        "claude gpt4 llama mistral langchain dspy instructor vllm",
        "prompt systemprompt fewshot contextwindow temperature hallucination jsonmode toolcall "
        "response tokenbudget guardrail chainofthought grader rubric judge stopsequence",
        "instruct summarize extract ground critique stream cite paraphrase",
    ),
    _t(
        "docs",
        "docs",
        "docusaurus mkdocs sphinx mdx astro vitepress typedoc mintlify",
        "readme tutorial guide apireference navigation docstring example diagram glossary "
        "faq quickstart versioning admonition codeblock frontmatter translation",
        "document proofread translate outline illustrate link annotate rewrite",
    ),
    _t(
        "ios",
        "mobile",
        "swift swiftui xcode testflight cocoapods uikit fastlane combine",
        "viewcontroller storyboard provisioning plist appstore simulator pushnotification "
        "keychain coredata bundleid signing widget appclip deeplink launchscreen crashlog",
        "codesign notarize submit sideload symbolicate archive localize profile",
    ),
    _t(
        "android",
        "mobile",
        "kotlin gradle compose androidstudio firebase proguard hilt room",
        "activity fragment intent androidmanifest apk aab emulator playstore recyclerview "
        "viewmodel lifecycle runtimepermission notificationchannel workmanager sdk obfuscation",
        "minify inflate obfuscate sign bundle install relaunch backport",
    ),
    _t(
        "api",
        "backend",
        "fastapi express hono grpc graphql openapi trpc django",
        "endpoint router request payload pagination apiversion statuscode middleware "
        "serializer idempotency header querystring contract errorcode handler jsonbody",
        "validate deserialize expose deprecate respond fetch post handle",
    ),
    _t(
        "queues",
        "backend",
        "kafka rabbitmq sqs celery bullmq temporal nats sidekiq",
        "consumer producer partitionkey deadletter backpressure offset ack worker jobqueue "
        "retrypolicy visibilitytimeout throughput fanout dedupkey poisonmessage consumerlag",
        "enqueue dequeue produce consume requeue acknowledge backoff shed",
    ),
    _t(
        "security",
        "security",
        "vault snyk trivy dependabot semgrep gitleaks sops bitwarden",
        "secret cve vulnerability encryption keypair apikey sbom pentest exploit sanitizer "
        "xss injection threatmodel supplychain signature hashing",
        "encrypt decrypt rotate scan patch sanitize harden redact",
    ),
    _t(
        "analytics",
        "data",
        "duckdb dbt snowflake bigquery airflow metabase polars spark",
        "warehouse etl funnel cohort retention kpi report aggregation rollup dimtable "
        "facttable parquet notebook chart segment attribution",
        "aggregate ingest transform join pivot forecast visualize materialize",
    ),
    _t(
        "rust",
        "systems",
        "cargo rustc clippy tokio serde rayon miri wasmtime",
        "borrowchecker lifetime trait crate macro enum struct mutex arc unsafe allocator "
        "futures closure generics panic workspace",
        "compile borrow clone unwrap spawn await benchmark vendor",
    ),
    _t(
        "memory_pipeline",
        "memory",
        "signet daemon sidecar predictor harness claudecode opencode openclaw",
        "memory extraction decay importance supersession provenance candidate transcript "
        "summary hook entity aspect dedup scorer continuity recallpool",
        "remember forget inject score consolidate supersede prefilter reinforce",
    ),
    _t(
        "habits",
        "global",
        "neovim tmux zsh pnpm prettier ripgrep git bun",
        "tabs spaces indentation commit branch terminal shortcut dotfiles alias keyboard "
        "colorscheme naming camelcase comments linebreak emoji",
        "squash amend stash cherrypick autoformat push pull typecheck",
    ),
)

TOPICS: dict[str, Topic] = {t.name: t for t in _ALL}
"""Every topic by name, in a fixed order (the embedder derives its vectors in this order)."""

GLOBAL_TOPIC = "habits"
"""The topic of global preferences: memories that matter in every project."""

TIME_WORDS: tuple[str, ...] = _words(
    """monday friday saturday sunday weekend weekday weekly morning afternoon evening night
    nightly overnight midnight oncall shift window freeze tonight weekdays weekends afternoons"""
)
"""Words of time-patterned memories ("On Friday afternoons ... deploy window ...")."""

GENERIC_WORDS: tuple[str, ...] = tuple(
    sorted(
        _words(
            """a about add after again agreed all also always an and any applies are around as at be
            because before being between breaks broken but by can changed changes check checks
            chose could decide decided depends did directly do does done during error every exceed fail
            failing fails first fix for from getting going had hand handles happened has have
            help here how i idea if in inside instead into is it its job just keep keeps kept
            last leave less let lets likes limit lives longer look looks manages me more moved
            must my need needs never new next no not note notes now of ok okay old on once one
            only onto or our out over owned pages per pinned please prefers rather remind
            retired review routine rule run running runs s same see seems separate set should
            slow small so stay stays steps still supports sure switched than that the then
            there these think this through to today too touch touching try trying until up
            update updated us use used uses using version versions want was we week what when
            where which while why with without work working would wrong you"""
        )
    )
)
"""Function and template words: they carry no topic (the embedder gives them small vectors)."""


def get_topic(name: str) -> Topic:
    """The topic called `name` (KeyError names the known topics)."""
    try:
        return TOPICS[name]
    except KeyError:
        raise KeyError(f"unknown topic {name!r}; known: {', '.join(TOPICS)}") from None
