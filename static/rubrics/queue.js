// The review queue's keyboard flow (as in Argilla or Label Studio). Every key presses a button or follows a
// link that is on the page without JavaScript:
//   p / f / u  record pass / fail / unsure and move on (#human-verdict's buttons)
//   z          undo your last label (#queue-undo's button)
//   j / k      the next / previous pair; n the next unlabelled pair
//   c          focus the note; Escape leaves it
// Keys typed into a field are text.
document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLElement && target.closest("input, textarea, select, [contenteditable]")) {
    // Escape leaves the note, so the next key is a verdict again.
    if (event.key === "Escape") target.blur();
    return;
  }
  const key = event.key.toLowerCase();
  // Only a letter goes into the selector (a quote typed on the page would break it).
  const button =
    /^[a-z]$/.test(key) &&
    document.querySelector(`#human-verdict button[data-key="${key}"], #queue-undo button[data-key="${key}"]`);
  if (button) {
    event.preventDefault();
    button.click();
    return;
  }
  const links = {
    j: "queue-next",
    arrowright: "queue-next",
    k: "queue-previous",
    arrowleft: "queue-previous",
    n: "queue-next-unlabelled",
  };
  const link = links[key] && document.getElementById(links[key]);
  if (link) {
    event.preventDefault();
    link.click();
    return;
  }
  if (key === "c") {
    const note = document.querySelector("#human-verdict textarea");
    if (note) {
      event.preventDefault();
      note.focus();
    }
  }
});
