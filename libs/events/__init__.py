"""Events: what happened to a program (an OOM kill, a restart with an error), per tenant.

`model` (the event, its kinds and checks), `store` (Postgres, recorded once per key), `api` (recording
over REST and gRPC, served by the ingester, the querier and `flamewatch all`; `assemble` adds it to a
process), `alertmanager` (each new event as an alert to Prometheus Alertmanagers, the `Recorder`'s notify
callback; `alertconfig` its settings). The querier links each event to the profiles that explain it
(`flamewatch.querier.incidents`).
"""
