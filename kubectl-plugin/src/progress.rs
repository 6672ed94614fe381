//! The progress line on stderr: types listed of all, objects seen. Only on a terminal, so
//! that a script's stderr holds errors, not redraws.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A progress line when stderr is a terminal, else nothing.
    pub fn on_terminal() -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        // Drawn once the number of types is known.
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("types {pos}/{len} listed, {msg} objects") {
            bar.set_style(style);
        }
        bar.set_message("0");
        Progress(Some(bar))
    }

    pub fn hidden() -> Progress {
        Progress(None)
    }

    pub fn types(&self, n: usize) {
        if let Some(bar) = &self.0 {
            bar.set_length(n as u64);
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    pub fn type_done(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }

    pub fn objects(&self, n: usize) {
        if let Some(bar) = &self.0 {
            let seen: usize = bar.message().parse().unwrap_or(0);
            bar.set_message((seen + n).to_string());
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
