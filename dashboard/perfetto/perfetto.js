// "Open in Perfetto" (issue #17, item 5): Perfetto's deep-linking handshake — open the UI, PING it
// until it answers PONG, then post the trace as an ArrayBuffer. See __init__.py.
const PING_MS = 100;
const GIVE_UP_MS = 30000;

export default function (component) {
  const { data, parentElement } = component;
  parentElement.querySelectorAll(".pl-perfetto").forEach((e) => e.remove());
  if (!data || !data.url) return undefined;
  const root = document.createElement("div");
  root.className = "pl-perfetto";
  root.innerHTML = '<button type="button" class="pl-perfetto-open">Open in Perfetto</button>'
    + '<span class="pl-perfetto-note" data-testid="perfetto-note"></span>';
  parentElement.appendChild(root);
  const button = root.querySelector("button");
  const note = root.querySelector(".pl-perfetto-note");
  button.title = `Opens ${data.url} in a new window and hands it this run's trace`;
  let timer = null;
  let onMessage = null;
  const stop = () => {
    if (timer) clearInterval(timer);
    if (onMessage) window.removeEventListener("message", onMessage);
    timer = onMessage = null;
  };
  button.addEventListener("click", () => {
    stop();
    const win = window.open(data.url);  // in the click: a window opened later would be blocked
    if (!win) {
      note.textContent = "The browser blocked the new window; allow pop-ups for this page, or download the trace.";
      return;
    }
    note.textContent = `Waiting for Perfetto at ${data.url} …`;
    const started = Date.now();
    onMessage = (event) => {
      if (event.source !== win || event.data !== "PONG") return;
      stop();
      const buffer = new TextEncoder().encode(data.trace).buffer;
      win.postMessage({ perfetto: { buffer, title: data.title, fileName: data.file_name } }, data.origin);
      note.textContent = `Sent ${data.file_name} to Perfetto.`;
    };
    window.addEventListener("message", onMessage);
    timer = setInterval(() => {
      if (win.closed || Date.now() - started > GIVE_UP_MS) {
        stop();
        note.textContent = `Perfetto at ${data.url} did not answer; download the trace and open it there.`;
        return;
      }
      win.postMessage("PING", data.origin);
    }, PING_MS);
  });
  return () => { stop(); root.remove(); };
}
