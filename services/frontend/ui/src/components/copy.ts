// Copying text to the clipboard, and a short notice that says it was done. The Clipboard API exists only on
// secure pages (https, localhost); on a plain-http address the text is copied through a selection.

import { useCallback, useEffect, useState } from "react";

export async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement("textarea");
  area.value = text;
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("the browser refused to copy");
}

/** A notice shown for two seconds, and the function that shows one. */
export function useNotice(): [string, (text: string) => void] {
  const [notice, setNotice] = useState("");
  useEffect(() => {
    if (!notice) return;
    const timer = setTimeout(() => setNotice(""), 2000);
    return () => clearTimeout(timer);
  }, [notice]);
  return [notice, useCallback((text: string) => setNotice(text), [])];
}

/** Copies `text` and says so, or says why not and what to do instead. */
export function copyWithNotice(text: string, say: (notice: string) => void, done: string, instead: string): Promise<void> {
  return copyText(text).then(() => say(done), (e: Error) => say(`Not copied (${e.message}): ${instead}`));
}
