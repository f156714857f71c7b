// The search page: GET /info once for the summary and the modes, GET /search for each query; the query,
// k, mode and filters live in the address so a search can be linked to and reloaded. On a server of collections
// (GET /collections answers), the user picks one, and /info and /search are that collection's
// (/collections/NAME/info, /collections/NAME/search); the collection is in the address too.
"use strict";

const $ = (id) => document.getElementById(id);
let maxK = 1000;
let heldCollections = false;  // whether this server holds collections rather than one index

// Where the picked collection's routes are ("" on a server of one index).
function base() {
  return heldCollections && $("collection").value ? "/collections/" + encodeURIComponent($("collection").value) : "";
}

function headers() {
  const key = $("key").value || sessionStorage.getItem("searchengine-key") || "";
  return key ? { Authorization: "Bearer " + key } : {};
}

async function getJSON(url) {
  const response = await fetch(url, { headers: headers() });
  const body = await response.json().catch(() => ({ error: response.status + " " + response.statusText }));
  if (response.status === 401) $("keyrow").style.display = "flex";
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function addFilter(value) {
  const wrap = document.createElement("span");
  wrap.className = "filter";
  const input = document.createElement("input");
  input.type = "text";
  input.placeholder = "lang=en";
  input.value = value || "";
  input.setAttribute("aria-label", "Filter");
  const remove = document.createElement("button");
  remove.type = "button";
  remove.textContent = "\u00d7";
  remove.title = "Remove this filter";
  remove.onclick = () => wrap.remove();
  wrap.append(input, remove);
  $("filters").append(wrap);
  return input;
}

function filters() {
  return [...$("filters").querySelectorAll("input")].map((input) => input.value.trim()).filter(Boolean);
}

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

// How each mode is offered and what its hits show: GET /info's server.mode_details, from the server's registry.
let modeDetails = {};
const SIDE_SCORES = {
  dense: (hit) => "cosine " + hit.dense_score.toFixed(4),
  keyword: (hit) => "BM25 " + hit.keyword_score.toFixed(2),
};

// The sentences of a hit nearest to the query (highlight.span, character offsets into its text), its query words
// in <mark>; text nodes only, never HTML made from the document. The offsets count characters (code points), as
// Python does, so the text is cut as an array of characters: JavaScript's own indices count UTF-16 units, and an
// emoji or other character outside the BMP is two of them.
function highlighted(text, highlight) {
  const characters = Array.from(text);
  const cut = (from, to) => characters.slice(from, to).join("");
  const [start, end] = highlight.span;
  const nodes = [];
  if (cut(0, start).trim()) nodes.push(document.createTextNode("\u2026"));
  let at = start;
  for (const [wordStart, wordEnd] of highlight.words) {
    if (wordStart < at || wordEnd > end) continue;
    nodes.push(document.createTextNode(cut(at, wordStart)));
    const mark = document.createElement("mark");
    mark.textContent = cut(wordStart, wordEnd);
    nodes.push(mark);
    at = wordEnd;
  }
  nodes.push(document.createTextNode(cut(at, end)));
  if (cut(end).trim()) nodes.push(document.createTextNode("\u2026"));
  return nodes;
}

// The filter FIELD=VALUE that matches a metadata value as the server reads filters (searchengine.engine.filters):
// a field name that is not one bare word in backticks (or double quotes), text in quotes so that "2004" stays
// text and "cats or dogs" one value; null for the rare name or text that no quoting can carry.
function filterFor(field, value) {
  const quoted = (text, marks) => {
    const mark = [...marks].find((candidate) => !text.includes(candidate));
    return mark === undefined ? null : mark + text + mark;
  };
  const name = /^[^=!<>^\s`"']+$/.test(field) ? field : quoted(field, "`\"");
  const shown = typeof value === "string" ? quoted(value, "\"'") : String(value);
  return name === null || shown === null ? null : name + "=" + shown;
}

const FILE_FACTS = new Set(["path", "file", "format", "title", "sections", "page", "size", "mtime_ns", "sha256"]);

function renderHit(hit, rank, mode) {
  const item = document.createElement("li");
  item.className = "hit";
  item.dataset.id = hit.id;
  const meta = document.createElement("div");
  meta.className = "meta";
  // Every mode scores on a scale fixed before the query (cosine; keyword and hybrid 0..1): the bar is that scale.
  const bar = `<span class="bar"><i style="width:${Math.max(0, Math.min(1, hit.score)) * 100}%"></i></span>`;
  meta.innerHTML = `<span class="rank">${rank}</span><span class="score">${hit.score.toFixed(4)}</span>${bar}`;
  const parts = ["#" + hit.id];
  const details = modeDetails[mode] || { score_name: mode, sides: [], side_scores: [] };  // /info not read yet
  if (hit.retrieval_score !== null) parts.push(details.score_name + " " + hit.retrieval_score.toFixed(4));
  if (hit.external_id !== null) parts.push(hit.external_id);
  if (hit.location !== null) parts.push(hit.location); // the heading or page of a file it matched in
  for (const side of details.side_scores) parts.push(SIDE_SCORES[side](hit));
  if (details.sides.length > 1) parts.push("found by " + hit.found_by.join(" + "));
  if (hit.source) parts.push(hit.source + (hit.line !== null ? ":" + hit.line : ""));
  if (hit.count > 1) parts.push("indexed " + hit.count + "\u00d7");
  if (hit.cluster !== null) parts.push("cluster " + hit.cluster);
  for (const part of parts) {
    const span = document.createElement("span");
    span.textContent = part;
    meta.append(span);
  }
  const fromFile = hit.metadata && typeof hit.metadata.path === "string";
  if (fromFile && hit.metadata.title) {
    const title = document.createElement("div");
    title.className = "title";
    title.textContent = hit.metadata.title;
    item.append(title);
  }
  const text = document.createElement("div");
  text.className = "text";
  if (hit.highlight) text.replaceChildren(...highlighted(hit.text, hit.highlight));
  else text.textContent = hit.span ? hit.snippet : hit.text; // a long document's passage that matched, in one line
  item.append(meta, text);
  if (hit.highlight && (hit.highlight.span[0] > 0 || hit.highlight.span[1] < Array.from(hit.text).length)) {
    const whole = document.createElement("details");
    whole.className = "whole";
    const summary = document.createElement("summary");
    summary.textContent = "Whole text";
    const body = document.createElement("div");
    body.textContent = hit.text;
    whole.append(summary, body);
    item.append(whole);
  }
  // A file's facts (its path, sections, hash, times) are shown above or are for sync, not for filtering chips.
  const entries = Object.entries(hit.metadata || {}).filter(([field]) => !(fromFile && FILE_FACTS.has(field)));
  if (entries.length) {
    const chips = document.createElement("div");
    chips.className = "chips";
    for (const [field, value] of entries) {
      const chip = document.createElement("button");
      chip.type = "button";
      chip.className = "chip";
      const shown = typeof value === "object" ? JSON.stringify(value) : String(value);
      chip.textContent = field + ": " + shown;
      chip.title = "Filter on " + field + "=" + shown;
      const condition = typeof value === "object" ? null : filterFor(field, value);
      if (condition !== null) chip.onclick = () => { addFilter(condition); search(); };
      chips.append(chip);
    }
    item.append(chips);
  }
  return item;
}

async function search() {
  const q = $("q").value.trim();
  if (!q) { setStatus("Type what to search for.", true); return; }
  if ($("key").value) sessionStorage.setItem("searchengine-key", $("key").value);
  const params = new URLSearchParams({ q, k: String(Math.min(maxK, Math.max(1, Number($("k").value) || 10))) });
  if (heldCollections) params.set("collection", $("collection").value);
  for (const condition of filters()) params.append("where", condition);
  const mode = $("mode").value;
  if (mode.startsWith("rerank:")) params.set("rerank", mode.slice("rerank:".length));
  else if (mode) params.set("mode", mode);
  history.replaceState(null, "", "?" + params);
  params.delete("collection");  // in the address, not in the search's: the path names it
  setStatus("Searching\u2026");
  const started = performance.now();
  try {
    const result = await getJSON(base() + "/search?" + params + "&highlight=true");  // the sentences to show, marked
    const took = Math.round(performance.now() - started);
    $("results").replaceChildren(...result.hits.map((hit, i) => renderHit(hit, i + 1, result.mode)));
    const how = `, ${result.mode}` + (result.rerank ? `, reranked by ${result.rerank.model} from the top ${result.rerank.top}` : "");
    setStatus(result.hits.length ? `${result.hits.length} results in ${took} ms${how}` : "No documents match.");
  } catch (error) {
    $("results").replaceChildren();
    setStatus(error.message, true);
  }
}

// Whether the server holds collections (GET /collections answers; a server of one index answers 400), and if so
// the picker filled with them, the address's collection picked.
async function loadCollections() {
  const response = await fetch("/collections", { headers: headers() });
  if (response.status === 401) $("keyrow").style.display = "flex";
  if (!response.ok) return;
  const listed = (await response.json()).collections;
  heldCollections = true;
  $("collection-label").hidden = false;
  const picked = new URLSearchParams(location.search).get("collection") || $("collection").value;
  $("collection").replaceChildren(...listed.map((c) => new Option(`${c.name} (${c.documents.toLocaleString()})`, c.name)));
  if (listed.some((c) => c.name === picked)) $("collection").value = picked;
}

async function loadInfo() {
  try {
    if (heldCollections && !$("collection").value) {
      $("summary").textContent = "No collections yet: POST /collections makes one.";
      return;
    }
    const info = await getJSON(base() + "/info");
    maxK = info.server.limits.k;
    $("k").max = String(maxK);
    $("summary").textContent = `${info.documents.toLocaleString()} documents \u00b7 ${info.model} \u00b7 ` +
      `${info.index_type} index${info.whitening ? " \u00b7 whitening-" + info.whitening : ""} \u00b7 ${info.path}`;
    modeDetails = info.server.mode_details;
    const modes = info.server.modes.map((mode) => new Option(modeDetails[mode].label, mode));
    $("mode").replaceChildren(...modes);
    $("mode").value = info.server.default_mode;
    for (const model of info.server.rerank) {
      const option = new Option(`${info.server.default_mode}, reranked by ${model}`, "rerank:" + model);
      $("mode").append(option);
    }
  } catch (error) {
    setStatus(error.message, true);
  }
}

function restoreFromAddress() {
  const params = new URLSearchParams(location.search);
  $("q").value = params.get("q") || "";
  if (params.get("k")) $("k").value = params.get("k");
  for (const condition of params.getAll("where")) addFilter(condition);
  if (params.get("mode")) $("mode").value = params.get("mode");
  if (params.get("rerank")) $("mode").value = "rerank:" + params.get("rerank");
  return Boolean(params.get("q"));
}

$("search-form").addEventListener("submit", (event) => { event.preventDefault(); search(); });
$("add-filter").addEventListener("click", () => addFilter("").focus());
$("key").addEventListener("change", async () => {
  sessionStorage.setItem("searchengine-key", $("key").value);
  await loadCollections();
  loadInfo();
});
$("collection").addEventListener("change", async () => {
  $("results").replaceChildren();
  setStatus("");
  await loadInfo();
  if ($("q").value.trim()) search();
});
loadCollections().then(loadInfo).then(() => { if (restoreFromAddress()) search(); });
