// Copies the page's permalink (its URL holds the whole view) to the clipboard. The Clipboard API exists
// only on secure pages (https, localhost); on a plain-http address the text is copied through a selection.

import { useEffect, useState } from "react";

async function copyText(text: string): Promise<void> {
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

export function CopyLinkButton() {
  const [said, setSaid] = useState("");
  useEffect(() => {
    if (!said) return;
    const timer = setTimeout(() => setSaid(""), 2000);
    return () => clearTimeout(timer);
  }, [said]);
  const copy = () => copyText(window.location.href).then(() => setSaid("Copied"),
    (e: Error) => setSaid(`Not copied (${e.message}): copy the address bar`));
  return (
    <>
      <button type="button" onClick={copy} title="copy a link to this view: it opens with everything picked here">
        {said || "Copy link"}
      </button>
      <span className="visually-hidden" role="status">{said}</span>
    </>
  );
}
