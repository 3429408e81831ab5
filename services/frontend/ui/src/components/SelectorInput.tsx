// The label selector box: autocomplete of label names and values from the API, and the API's own
// message when the selector does not parse, both as the user types.

import { useEffect, useMemo, useRef, useState } from "react";
import { api, exactSelector, type TimeRange } from "../api/client";
import { applyCompletion, completionAt, type Completion } from "../state/selector";

interface Props {
  value: string;
  profileType: string;
  range: TimeRange;
  onChange: (value: string) => void;
  label?: string;
  id: string;
}

const HIDDEN_LABELS = new Set(["__name__", "__profile_type__"]);

export function SelectorInput({ value, profileType, range, onChange, label = "Label selector", id }: Props) {
  const [text, setText] = useState(value);
  const [cursor, setCursor] = useState(0);
  const [focused, setFocused] = useState(false);
  const [options, setOptions] = useState<string[]>([]);
  const [active, setActive] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => setText(value), [value]);
  const completion: Completion = useMemo(() => (focused ? completionAt(text, cursor) : null), [text, cursor, focused]);
  const typeMatch = profileType ? exactSelector({ __profile_type__: profileType }) : "{}";

  // The selector checked by the API as it is typed: its error message positions refer to this text.
  useEffect(() => {
    if (text.trim() === "") return setError(null);
    const controller = new AbortController();
    const timer = setTimeout(() => {
      api.labelNames(text, range, controller.signal).then(() => setError(null), (e: Error) => {
        if (e.name !== "AbortError") setError(e.message);
      });
    }, 250);
    return () => {
      clearTimeout(timer);
      controller.abort();
    };
  }, [text, range.from, range.until]);

  useEffect(() => {
    if (!completion) return setOptions([]);
    const controller = new AbortController();
    const load = completion.kind === "name"
      ? api.labelNames(typeMatch, range, controller.signal).then((names) => names.filter((n) => !HIDDEN_LABELS.has(n)))
      : api.labelValues(completion.name, typeMatch, range, controller.signal);
    load.then((all) => {
      const prefix = completion.prefix.toLowerCase();
      setOptions(all.filter((o) => o.toLowerCase().startsWith(prefix)).slice(0, 50));
      setActive(0);
    }, () => setOptions([]));
    return () => controller.abort();
  }, [completion?.kind, completion?.kind === "value" ? completion.name : "", completion?.prefix, typeMatch, range.from, range.until]);

  const choose = (choice: string) => {
    if (!completion) return;
    const next = applyCompletion(text, cursor, completion, choice);
    setText(next.text);
    setCursor(next.cursor);
    requestAnimationFrame(() => input.current?.setSelectionRange(next.cursor, next.cursor));
  };

  const onKeyDown = (e: React.KeyboardEvent<HTMLInputElement>) => {
    const open = options.length > 0 && completion;
    if (open && e.key === "ArrowDown") setActive((a) => (a + 1) % options.length);
    else if (open && e.key === "ArrowUp") setActive((a) => (a - 1 + options.length) % options.length);
    else if (open && (e.key === "Tab" || (e.key === "Enter" && options[active] !== undefined))) choose(options[active]);
    else if (e.key === "Enter") return onChange(text);
    else if (e.key === "Escape") setOptions([]);
    else return;
    e.preventDefault();
  };

  return (
    <div className="selector">
      <label htmlFor={id} className="visually-hidden">{label}</label>
      <input
        id={id}
        ref={input}
        className={error ? "invalid" : ""}
        value={text}
        placeholder='{service_name="demo"}'
        spellCheck={false}
        autoComplete="off"
        aria-invalid={error !== null}
        aria-describedby={error ? `${id}-error` : undefined}
        onChange={(e) => {
          setText(e.target.value);
          setCursor(e.target.selectionStart ?? e.target.value.length);
        }}
        onSelect={(e) => setCursor(e.currentTarget.selectionStart ?? 0)}
        onKeyDown={onKeyDown}
        onFocus={() => setFocused(true)}
        onBlur={() => {
          setFocused(false);
          if (text !== value) onChange(text);
        }}
      />
      {completion && options.length > 0 && (
        <ul className="completions" role="listbox" aria-label={completion.kind === "name" ? "label names" : "label values"}>
          {options.map((o, i) => (
            <li key={o} role="option" aria-selected={i === active} className={i === active ? "active" : ""}
              onMouseDown={(e) => {
                e.preventDefault();
                choose(o);
              }}>
              {o}
            </li>
          ))}
        </ul>
      )}
      {error && <div id={`${id}-error`} className="selector-error" role="alert">{error}</div>}
    </div>
  );
}
