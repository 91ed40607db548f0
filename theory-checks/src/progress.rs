//! Progress for sweeps and long checks: an indicatif bar with ETA when stderr is a terminal,
//! plain periodic lines otherwise (logs of Slurm jobs, CI).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Minimum interval between plain progress lines.
const PLAIN_INTERVAL: Duration = Duration::from_secs(10);

/// A progress display over a known number of steps.
pub struct Progress {
    what: String,
    total: usize,
    started: Instant,
    bar: Option<ProgressBar>,
    last_line: Mutex<Option<Instant>>,
}

impl Progress {
    /// Start a display of `total` steps named `what`.
    pub fn new(what: &str, total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total as u64);
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {wide_msg} elapsed {elapsed} ETA {eta}",
            ) {
                b.set_style(style.progress_chars("=> "));
            }
            b.set_prefix(what.to_string());
            b
        });
        Self {
            what: what.into(),
            total,
            started: Instant::now(),
            bar,
            last_line: Mutex::new(None),
        }
    }

    /// Step `done` of `total` finished (`label` = what just finished).
    pub fn step(&self, done: usize, label: &str) {
        if let Some(b) = &self.bar {
            b.set_position(done as u64);
            b.set_message(label.to_string());
            return;
        }
        let now = Instant::now();
        let Ok(mut last) = self.last_line.lock() else {
            return;
        };
        if done < self.total && last.is_some_and(|t| now - t < PLAIN_INTERVAL) {
            return;
        }
        *last = Some(now);
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = if done > 0 {
            elapsed / done as f64 * (self.total - done) as f64
        } else {
            f64::NAN
        };
        eprintln!(
            "{}: {done}/{} ({label}) elapsed {elapsed:.0} s, ETA {eta:.0} s",
            self.what, self.total
        );
    }

    /// Print a line without breaking the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => println!("{line}"),
        }
    }

    /// Finish the display.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
