-- Tenant settings (Pyroscope's settings.v1, which Grafana's Profiles Drilldown keeps its own settings in):
-- a value per tenant and name, and when it was last changed, so an older write cannot undo a newer one.
CREATE TABLE settings (
    tenant      text   NOT NULL,
    name        text   NOT NULL,
    value       text   NOT NULL,
    modified_at bigint NOT NULL,  -- ms since the epoch, as the API gives it
    PRIMARY KEY (tenant, name)
);
