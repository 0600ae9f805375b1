// The review queue's keyboard flow (as in Argilla or Label Studio): p / f / u record pass / fail / unsure
// and move on; j / k go to the next / previous pair; n focuses the note, Escape leaves it. Keys typed into a
// field are text.
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLElement && target.closest("input, textarea, select, [contenteditable]")) {
    // Escape leaves the note, so the next key is a verdict again.
    if (event.key === "Escape") target.blur();
    return;
  }
  const key = event.key.toLowerCase();
  const button = document.querySelector(`#human-verdict button[data-key="${key}"]`);
  if (button) {
    event.preventDefault();
    button.click();
    return;
  }
  const links = { j: "queue-next", arrowright: "queue-next", k: "queue-previous", arrowleft: "queue-previous" };
  const link = links[key] && document.getElementById(links[key]);
  if (link) {
    event.preventDefault();
    link.click();
    return;
  }
  if (key === "n") {
    const note = document.querySelector("#human-verdict textarea");
    if (note) {
      event.preventDefault();
      note.focus();
    }
  }
});
