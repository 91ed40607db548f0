//! Progress on stderr for long commands — `fedmix run`, `generate`, `validate`, and the sweeps
//! and checks of `theory-checks` — in one place: an indicatif bar with ETA when stderr is a
//! terminal, plain periodic lines otherwise (logs of Slurm jobs, CI). stdout stays the
//! command's output.
//!
//! [`Progress`] is the display over a count of steps (known total: bar and ETA; unknown: a
//! counter). [`RunProgress`] is what a running algorithm publishes (rounds recorded, the last
//! round's `d(θ_t, θ*)`), and [`Watcher`] a thread that shows it while the run goes on.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Minimum interval between plain progress lines.
const PLAIN_INTERVAL: Duration = Duration::from_secs(10);

/// What a [`Progress`] counts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Count {
    /// Steps out of a known total (bar and ETA).
    Total(usize),
    /// Steps, total unknown.
    Open,
    /// Nothing: the elapsed time only.
    Elapsed,
}

/// A progress display over a number of steps, known (`total`) or not.
pub struct Progress {
    what: String,
    count: Count,
    started: Instant,
    bar: Option<ProgressBar>,
    /// When the last plain line was printed, and at which count.
    last_line: Mutex<Option<(Instant, usize)>>,
}

impl Progress {
    /// A display of `total` steps named `what`.
    pub fn new(what: &str, total: usize) -> Self {
        Self::with_total(what, Some(total))
    }

    /// A display of the elapsed time of `what` (nothing counted), updated by `step(0, "")`.
    pub fn timer(what: &str) -> Self {
        Self::build(what, Count::Elapsed)
    }

    /// A display named `what` over `total` steps when known (bar and ETA), or a plain counter.
    pub fn with_total(what: &str, total: Option<usize>) -> Self {
        Self::build(what, total.map_or(Count::Open, Count::Total))
    }

    fn build(what: &str, count: Count) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let (b, template) = match count {
                Count::Elapsed => (
                    ProgressBar::no_length(),
                    "{prefix} {spinner} elapsed {elapsed}",
                ),
                Count::Total(t) => (
                    ProgressBar::new(t as u64),
                    "{prefix} [{bar:30}] {pos}/{len} {wide_msg} elapsed {elapsed} ETA {eta}",
                ),
                Count::Open => (
                    ProgressBar::no_length(),
                    "{prefix} {pos} {wide_msg} elapsed {elapsed}",
                ),
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(style.progress_chars("=> "));
            }
            b.set_prefix(what.to_string());
            b
        });
        Self {
            what: what.into(),
            count,
            started: Instant::now(),
            bar,
            last_line: Mutex::new(None),
        }
    }

    /// `done` steps finished (`label` = what just finished, or the current state).
    pub fn step(&self, done: usize, label: &str) {
        if let Some(b) = &self.bar {
            if self.count == Count::Elapsed {
                b.tick();
                return;
            }
            b.set_position(done as u64);
            b.set_message(label.to_string());
            return;
        }
        let now = Instant::now();
        let Ok(mut last) = self.last_line.lock() else {
            return;
        };
        let finished = matches!(self.count, Count::Total(t) if done >= t);
        let recent = last.is_some_and(|(t, _)| now - t < PLAIN_INTERVAL);
        // A finished count is printed once, however often it is reported.
        if (!finished && recent) || last.is_some_and(|(_, d)| finished && d == done) {
            return;
        }
        *last = Some((now, done));
        eprintln!("{}", self.plain_line(done, label));
    }

    /// The plain (non-terminal) line for `done` steps.
    fn plain_line(&self, done: usize, label: &str) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        match self.count {
            Count::Elapsed => format!("{}: elapsed {elapsed:.0} s", self.what),
            Count::Total(total) => {
                let eta = if done > 0 {
                    format!(
                        "{:.0} s",
                        elapsed / done as f64 * total.saturating_sub(done) as f64
                    )
                } else {
                    "unknown".into()
                };
                format!(
                    "{}: {done}/{total} ({label}) elapsed {elapsed:.0} s, ETA {eta}",
                    self.what
                )
            }
            Count::Open => format!("{}: {done} ({label}) elapsed {elapsed:.0} s", self.what),
        }
    }

    /// Count the elapsed time (and the ETA) from `started` rather than from now.
    pub fn since(mut self, started: Instant) -> Self {
        if let Some(b) = self.bar.take() {
            self.bar = Some(b.with_elapsed(started.elapsed()));
        }
        self.started = started;
        self
    }

    /// Print a line without breaking the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => println!("{line}"),
        }
    }

    /// Finish the display (a bar is cleared).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// What a running algorithm publishes for a display on another thread: rows recorded so far
/// and the last recorded `d(θ_t, θ*)` (SXY22 eq. 6; NaN until a row has one).
#[derive(Debug)]
pub struct RunProgress {
    rows: AtomicUsize,
    distance: AtomicU64,
}

impl Default for RunProgress {
    fn default() -> Self {
        Self {
            rows: AtomicUsize::new(0),
            distance: AtomicU64::new(f64::NAN.to_bits()),
        }
    }
}

impl RunProgress {
    /// `rows` rows recorded, the last with distance `distance` (if it has one).
    pub fn record(&self, rows: usize, distance: Option<f64>) {
        self.rows.store(rows, Ordering::Relaxed);
        if let Some(d) = distance {
            self.distance.store(d.to_bits(), Ordering::Relaxed);
        }
    }

    /// Rows recorded so far.
    pub fn rows(&self) -> usize {
        self.rows.load(Ordering::Relaxed)
    }

    /// The last recorded distance (NaN before the first).
    pub fn distance(&self) -> f64 {
        f64::from_bits(self.distance.load(Ordering::Relaxed))
    }
}

/// A thread showing a run's [`RunProgress`] until dropped: nothing for the first 2 s (short
/// runs stay silent), then the display, updated every 250 ms.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// Delay before a watcher shows anything (`FEDMIX_PROGRESS_DELAY_MS` overrides it, e.g. to
/// see the display on a short run).
const WATCH_DELAY: Duration = Duration::from_secs(2);

fn watch_delay() -> Duration {
    std::env::var("FEDMIX_PROGRESS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(WATCH_DELAY, Duration::from_millis)
}

impl Watcher {
    /// Watch `state` (rounds of `total` when known) under the name `what`; `None` draws nothing
    /// but the elapsed time (e.g. data generation).
    pub fn start(what: String, total: Option<usize>, state: Option<Arc<RunProgress>>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let delay = watch_delay();
        let handle = std::thread::spawn(move || {
            let started = Instant::now();
            let mut display: Option<Progress> = None;
            let show = |p: &Progress| match &state {
                Some(s) => {
                    let d = s.distance();
                    let label = if d.is_nan() {
                        "rounds".to_string()
                    } else {
                        format!("rounds, d(θ_t, θ*) = {d:.4e}")
                    };
                    p.step(s.rows(), &label);
                }
                None => p.step(0, ""),
            };
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                if started.elapsed() < delay {
                    continue;
                }
                let p = display.get_or_insert_with(|| {
                    match &state {
                        Some(_) => Progress::with_total(&what, total),
                        None => Progress::timer(&what),
                    }
                    .since(started)
                });
                show(p);
                std::thread::sleep(Duration::from_millis(150));
            }
            // Once shown, the display ends on the final state (the run may finish between polls).
            if let Some(p) = display {
                show(&p);
                p.finish();
            }
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_state_counts_and_eta() {
        let p = Progress::with_total("sweep", Some(4));
        let line = p.plain_line(0, "start");
        assert!(line.starts_with("sweep: 0/4 (start) elapsed") && line.ends_with("ETA unknown"));
        let open = Progress::with_total("run", None);
        assert!(open
            .plain_line(7, "rounds")
            .starts_with("run: 7 (rounds) elapsed"));
    }

    #[test]
    fn run_progress_keeps_the_last_distance() {
        let s = RunProgress::default();
        assert!(s.distance().is_nan() && s.rows() == 0);
        s.record(3, Some(0.25));
        s.record(4, None);
        assert_eq!((s.rows(), s.distance()), (4, 0.25));
    }
}
