// The tenant picker in the header: the tenants the credential may read (GET /api/v1/tenants). Hidden
// while there is nothing to choose: one tenant, or the list not loaded (the page then says why).

import type { Tenant } from "../api/types";

interface Props {
  tenants: Tenant[];
  /** The URL's tenant; "" for the credential's default. */
  value: string;
  onChange: (tenant: string) => void;
}

export function TenantPicker({ tenants, value, onChange }: Props) {
  const listed = value === "" || tenants.some((t) => t.name === value);
  if (tenants.length < 2 && listed) return null;
  const shown = value || (tenants.find((t) => t.default)?.name ?? "");
  return (
    <label className="tenant-picker">
      Tenant{" "}
      <select aria-label="tenant" value={shown} onChange={(e) => onChange(e.target.value)}>
        {!listed && <option value={value}>{value} (not listed)</option>}
        {tenants.map((t) => (
          <option key={t.name} value={t.name} title={`${t.series} series${t.default ? ", your default" : ""}`}>
            {t.name}
          </option>
        ))}
      </select>
    </label>
  );
}
