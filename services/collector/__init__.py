"""The collector: discovers targets, scrapes their pprof endpoints and pushes the profiles to the ingester."""
