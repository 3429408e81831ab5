// Copies the page's permalink (its URL holds the whole view) to the clipboard.

import { copyWithNotice, useNotice } from "./copy";

export function CopyLinkButton() {
  const [said, say] = useNotice();
  const copy = () => copyWithNotice(window.location.href, say, "Copied", "copy the address bar");
  return (
    <>
      <button type="button" onClick={copy} title="copy a link to this view: it opens with everything picked here">
        {said || "Copy link"}
      </button>
      <span className="visually-hidden" role="status">{said}</span>
    </>
  );
}
