// The UI's measured figures (docs/performance.md), run with `npm run perf` after `npm test` compiled it:
//   1. the first load's size is scripts/bundle-size.mjs;
//   2. time to first message: a cold page (new browser context, empty cache) at a session's address, the
//      message sent as soon as the composer is ready, until the answer's first text is on screen; median of 10;
//   3. a 2,000-message session (1,000 turns, seeded through the API): time from navigation until its last
//      message is on screen, and scrolling up through it (long animation frames over 50 ms, frame gaps).
// Figures, not assertions: the machine is shared and noisy, so the numbers are recorded with the conditions.

import { performance } from "node:perf_hooks";
import { type Harness, send, startHarness } from "../support/harness.js";

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

async function timeToFirstMessage(harness: Harness, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const sessionId = await harness.toolSession();
    const { context, page } = await harness.page();
    const started = performance.now();
    await page.goto(`/sessions/${sessionId}`);
    await page.getByLabel("Message", { exact: true }).waitFor();
    await send(page, "First message on screen. #echo #chunks=4");
    await page.waitForFunction(
      () => (document.querySelector(".tf-message-assistant")?.textContent ?? "").length > 0,
    );
    times.push(performance.now() - started);
    await context.close();
  }
  return times;
}

async function seedLongSession(harness: Harness, turns: number): Promise<string> {
  const sessionId = await harness.toolSession();
  for (let turn = 0; turn < turns; turn += 1) {
    await harness.api("POST", `/api/v1/sessions/${sessionId}/turns`, {
      input: [
        { type: "user.message", content: `Message number ${turn}: a line of text to read back. #echo` },
      ],
      previous_turn_id: "auto",
      stream: false,
    });
    // The next turn continues this one: wait until it is done.
    for (;;) {
      const page = await harness.api<{ data: { state: { status: string } }[] }>(
        "GET",
        `/api/v1/sessions/${sessionId}/turns?limit=1`,
      );
      if (page.data[0]?.state.status !== "running") {
        break;
      }
      await new Promise((done) => setTimeout(done, 5));
    }
  }
  return sessionId;
}

async function openLongSession(harness: Harness, sessionId: string) {
  const { context, page } = await harness.page({ height: 900 });
  const cdp = await context.newCDPSession(page);
  await cdp.send("Performance.enable");
  const started = performance.now();
  await page.goto(`/sessions/${sessionId}`);
  await page.getByText("Message number 999:", { exact: false }).last().waitFor();
  const openMs = performance.now() - started;
  const scroll = await page.evaluate(async () => {
    const thread = document.querySelector(".tf-thread") as HTMLElement;
    const long: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if (entry.duration > 50) {
          long.push(entry.duration);
        }
      }
    });
    observer.observe({ type: "long-animation-frame", buffered: false });
    const gaps: number[] = [];
    let last = performance.now();
    for (let frame = 0; frame < 240; frame += 1) {
      thread.scrollTop -= 120;
      await new Promise((done) => requestAnimationFrame(done));
      const now = performance.now();
      gaps.push(now - last);
      last = now;
    }
    observer.disconnect();
    gaps.sort((a, b) => a - b);
    return {
      frames: gaps.length,
      longFrames: long.length,
      maxGapMs: Math.round(gaps.at(-1) ?? 0),
      p95GapMs: Math.round(gaps[Math.floor(gaps.length * 0.95)] ?? 0),
      rendered: document.querySelectorAll(".tf-turn").length,
    };
  });
  await context.close();
  return { openMs, ...scroll };
}

const harness = await startHarness();
try {
  const ttfm = await timeToFirstMessage(harness, 10);
  console.log(
    `time to first message (cold page, median of ${ttfm.length}): ${median(ttfm).toFixed(0)} ms (min ${Math.min(...ttfm).toFixed(0)}, max ${Math.max(...ttfm).toFixed(0)})`,
  );
  const seeded = performance.now();
  const sessionId = await seedLongSession(harness, 1_000);
  console.log(`seeded 1,000 turns (2,000 messages) in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
  const runs = [];
  for (let run = 0; run < 5; run += 1) {
    runs.push(await openLongSession(harness, sessionId));
  }
  console.log(
    `2,000-message session, open until the last message is on screen: median ${median(runs.map((r) => r.openMs)).toFixed(0)} ms over ${runs.length} cold pages`,
  );
  for (const run of runs) {
    console.log(
      `  open ${run.openMs.toFixed(0)} ms; scroll ${run.frames} frames: ${run.longFrames} long frames (>50 ms), max gap ${run.maxGapMs} ms, p95 gap ${run.p95GapMs} ms; turns in the DOM ${run.rendered}`,
    );
  }
} finally {
  await harness.stop();
}
