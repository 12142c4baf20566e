// Checks the playground page of `gpt serve` (src/serve/page.html) in headless Chromium, as a user
// would use it: the model line loads; Generate streams max_tokens characters; clicking a generated
// character shows the next-character distribution and one labelled panel per layer and head; the
// whole attention map draws; Stop ends a generation; a server error shows in the page; a 375 px wide
// phone screen has no sideways scroll. Saves desktop.png (1280x900) and phone.png (375x812).
// Usage: node serve_browser_check.mjs BASE_URL SCREENSHOT_DIR
// PLAYWRIGHT_CORE_DIR: the folder whose node_modules holds playwright-core (serve_browser_check.sh's
// cache); CHROMIUM: the browser (default /usr/bin/chromium); API_KEY: the server's --api_key, typed
// into the page's prompt for it (which must then come once per tab). Exits 1 with a message when a
// check fails.
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";

const require = createRequire(path.join(path.resolve(process.env.PLAYWRIGHT_CORE_DIR ?? "."), "package.json"));
const {chromium} = require("playwright-core");

const [baseUrl, shotDir] = process.argv.slice(2);
if (!baseUrl || !shotDir) {
  console.error("usage: node serve_browser_check.mjs BASE_URL SCREENSHOT_DIR");
  process.exit(2);
}
const PROMPT = "ROMEO:\nWhat light";
const MAX_TOKENS = 40;
const TIMEOUT = 60_000;
const API_KEY = process.env.API_KEY ?? "";

class CheckFailed extends Error {}
function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
  console.log(`ok: ${message}`);
}

async function openPage(browser, viewport, pageErrors) {
  const context = await browser.newContext({viewport, deviceScaleFactor: 1, hasTouch: viewport.width < 500});
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.on("pageerror", (e) => pageErrors.push(`${viewport.width}px: ${e.message}`));
  // The 400 that checkServerError provokes, and the 401 before the key is typed, are logged by the
  // browser itself: not script errors.
  const expected = API_KEY ? /status of 40[01]/ : /status of 400/;
  page.on("console", (m) => {
    if (m.type() === "error" && !expected.test(m.text())) pageErrors.push(`${viewport.width}px console: ${m.text()}`);
  });
  let keyPrompts = 0;
  page.on("dialog", async (dialog) => {
    ++keyPrompts;
    if (API_KEY && dialog.type() === "prompt") await dialog.accept(API_KEY);
    else await dialog.dismiss();
  });
  await page.goto(baseUrl);
  await page.locator("#model[data-ready]").waitFor({timeout: 15_000}).catch(async () => {
    const text = (id) => document.getElementById(id)?.textContent ?? `(the page has no #${id})`;
    throw new CheckFailed(`the model line never loaded: "${await page.evaluate(text, "model")}", ` +
      `error box: "${await page.evaluate(text, "error")}"`);
  });
  check(keyPrompts === (API_KEY ? 1 : 0), `${viewport.width}px: the page asked for the API key ${keyPrompts} times`);
  page.keyPrompts = () => keyPrompts;
  return page;
}

async function modelMeta(page) {
  return page.evaluate(async () => {
    const key = sessionStorage.getItem("gpt-serve-api-key");
    const response = await fetch("/v1/models", {headers: key ? {Authorization: `Bearer ${key}`} : {}});
    return (await response.json()).data[0].meta;
  });
}

async function errorShown(page) {
  return (await page.locator("#error").isVisible()) ? await page.locator("#error").textContent() : "";
}

async function generate(page, maxTokens, seed) {
  await page.fill("#prompt", PROMPT);
  await page.fill("#max_tokens", String(maxTokens));
  await page.fill("#seed", String(seed));
  await page.click("#generate");
  await page.locator("#text[data-done]").waitFor();
  const error = await errorShown(page);
  check(!error, `generation ran without an error in the page${error ? `: ${error}` : ""}`);
  const spans = await page.locator("#text .ch").count();
  const promptLength = Array.from(PROMPT).length;
  check(spans === promptLength + maxTokens,
        `the text grew by ${maxTokens} characters (${promptLength} prompt + ${spans - promptLength} generated spans)`);
}

async function inspectGenerated(page, meta) {
  await page.locator("#dist .bar-row").first().waitFor();  // the inspection of the finished text
  const generated = page.locator("#text .ch:not(.prompt):not(.cropped)");
  const count = await generated.count();
  check(count > 5, `some generated characters are inside the inspected context (${count})`);
  await generated.nth(count - 5).click();
  await page.locator("#dist .bar-row").nth(1).waitFor();
  const bars = await page.locator("#dist .bar-row").count();
  check(bars >= 2, `the next-character chart shows ${bars} bars`);
  check(await page.locator("#dist .bar-row.actual").count() === 1, "the chart marks the character that came next");
  const heads = meta.n_layer * meta.n_head;
  await page.locator("#heads .head").nth(heads - 1).waitFor();
  const titles = await page.locator("#heads .head-title").allTextContents();
  check(titles.length === heads, `${titles.length} head panels = n_layer ${meta.n_layer} × n_head ${meta.n_head}`);
  const unlabelled = titles.filter((t) => !/^L\d+ H\d+ \S/.test(t) || t.endsWith("unlabelled"));
  check(unlabelled.length === 0, `every head panel has a label (e.g. "${titles[0]}")${unlabelled.length ? `; not: ${unlabelled.join(" | ")}` : ""}`);
  await page.locator("#heads .head").first().hover();
  const detail = await page.locator("#head-detail").textContent();
  check(/looked most at/.test(detail), `hovering a panel describes the head: "${detail}"`);
}

// Counts the map's cells drawn in the attention colour (blue well above red).
async function mapInkPixels(page) {
  return page.evaluate(() => {
    const canvas = document.getElementById("map");
    const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i + 2] - data[i] > 40) ink++;
    return {ink, width: canvas.width, height: canvas.height};
  });
}

async function showMap(page) {
  await page.check("#map-toggle");
  await page.locator("#map-wrap").waitFor({state: "visible"});
  const {ink, width, height} = await mapInkPixels(page);
  check(ink > 100, `the attention map (${width}x${height}) drew ${ink} attention-coloured pixels`);
}

async function checkStop(page) {
  await page.fill("#max_tokens", "2000");
  await page.fill("#seed", "");
  await page.click("#generate");
  await page.waitForFunction(() => document.querySelectorAll("#text .ch:not(.prompt)").length >= 5 ||
                                    document.getElementById("text").dataset.done !== undefined);
  await page.click("#stop").catch(() => {});  // the generation may have ended already: a fast server
  await page.locator("#text[data-done]").waitFor();
  const generated = Number(await page.locator("#text").getAttribute("data-done"));
  const error = await errorShown(page);
  check(!error && await page.locator("#generate").isEnabled(),
        `Stop ended the generation after ${generated} characters, Generate enabled again${error ? `; error: ${error}` : ""}`);
}

async function checkServerError(page) {
  await page.fill("#max_tokens", "5");
  await page.fill("#temperature", "-1");
  await page.click("#generate");
  await page.locator("#error").waitFor({state: "visible"});
  const error = await page.locator("#error").textContent();
  check(error.length > 10, `a server error (temperature -1) shows in the page: "${error}"`);
  await page.fill("#temperature", "0.8");
}

async function noSidewaysScroll(page) {
  const {scroll, client} = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth}));
  check(scroll <= client, `the 375 px page has no horizontal scroll (scrollWidth ${scroll}, clientWidth ${client})`);
}

async function run(browser, pageErrors) {
  fs.mkdirSync(shotDir, {recursive: true});
  const desktop = await openPage(browser, {width: 1280, height: 900}, pageErrors);
  const meta = await modelMeta(desktop);
  check(true, `model line: "${await desktop.locator("#model").textContent()}"`);
  await generate(desktop, MAX_TOKENS, 7);
  await inspectGenerated(desktop, meta);
  await showMap(desktop);
  await desktop.mouse.move(0, 0);
  await desktop.screenshot({path: path.join(shotDir, "desktop.png"), fullPage: true});
  await checkStop(desktop);
  await checkServerError(desktop);
  check(desktop.keyPrompts() === (API_KEY ? 1 : 0), `the page asked for the API key once per tab, not per request`);

  const phone = await openPage(browser, {width: 375, height: 812}, pageErrors);
  await noSidewaysScroll(phone);
  await generate(phone, MAX_TOKENS, 7);
  await inspectGenerated(phone, meta);
  await showMap(phone);
  await noSidewaysScroll(phone);
  await phone.screenshot({path: path.join(shotDir, "phone.png"), fullPage: true});
  check(pageErrors.length === 0, `no script errors in the page${pageErrors.length ? `: ${pageErrors.join("; ")}` : ""}`);
  console.log(`screenshots: ${path.join(shotDir, "desktop.png")}, ${path.join(shotDir, "phone.png")}`);
}

const browser = await chromium.launch({executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
                                       args: ["--no-sandbox"], headless: true});
const pageErrors = [];
let status = 0;
try {
  await run(browser, pageErrors);
  console.log("serve browser check: all passed");
} catch (e) {
  console.error(`FAIL: ${e instanceof CheckFailed ? e.message : e.stack}`);
  if (pageErrors.length) console.error(`script errors in the page: ${pageErrors.join("; ")}`);
  status = 1;
} finally {
  await browser.close();
}
process.exit(status);
