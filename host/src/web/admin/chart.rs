//! The "Watch it" chart: calls per minute over the last hour as an inline SVG bar chart, the
//! failed part of each bar in red, with a text summary for screen readers.

use std::time::Duration;

use maud::{Markup, html};

use crate::plugins::watch::{MINUTES, Summary};

const WIDTH: usize = 600;
const PLOT_TOP: f64 = 18.0;
const PLOT_BOTTOM: f64 = 120.0;

pub fn millis(duration: Option<Duration>) -> String {
    match duration {
        None => "–".into(),
        Some(d) if d < Duration::from_millis(10) => format!("{:.2} ms", d.as_secs_f64() * 1000.0),
        Some(d) => format!("{:.0} ms", d.as_secs_f64() * 1000.0),
    }
}

/// The figures of the hour: calls, failures, p50 and p99.
pub fn stats(summary: &Summary) -> Markup {
    let failed: u64 = summary.by_kind.values().sum();
    html! {
        div.stats {
            div.stat { b id="watch-calls" { (summary.total) } span { "calls" } }
            div.stat { b id="watch-failed" { (failed) } span { "failed" } }
            div.stat { b { (millis(summary.p50)) } span { "p50 latency" } }
            div.stat { b { (millis(summary.p99)) } span { "p99 latency" } }
        }
    }
}

pub fn chart(summary: &Summary) -> Markup {
    let max = summary.calls.iter().copied().max().unwrap_or(0).max(1);
    let slot = WIDTH as f64 / MINUTES as f64;
    let height = |n: u64| (PLOT_BOTTOM - PLOT_TOP) * n as f64 / max as f64;
    let failed: u64 = summary.by_kind.values().sum();
    let label = format!(
        "Calls per minute over the last hour: {} calls, {} failed, at most {} in a minute.",
        summary.total, failed, max
    );
    html! {
        svg.chart viewBox={ "0 0 " (WIDTH) " 140" } role="img" aria-labelledby="chart-title"
            xmlns="http://www.w3.org/2000/svg" {
            title id="chart-title" { (label) }
            line.axis x1="0" y1=(PLOT_BOTTOM) x2=(WIDTH) y2=(PLOT_BOTTOM) stroke-width="1" {}
            text x="0" y="12" { (max) " / min" }
            @for (i, (&calls, &failures)) in summary.calls.iter().zip(&summary.failures).enumerate() {
                @if calls > 0 {
                    @let x = i as f64 * slot + 1.0;
                    @let h = height(calls).max(2.0);
                    rect.calls x=(format!("{x:.1}")) y=(format!("{:.1}", PLOT_BOTTOM - h))
                        width=(format!("{:.1}", slot - 2.0)) height=(format!("{h:.1}")) {}
                    @if failures > 0 {
                        @let f = height(failures).max(2.0);
                        rect.failed x=(format!("{x:.1}")) y=(format!("{:.1}", PLOT_BOTTOM - f))
                            width=(format!("{:.1}", slot - 2.0)) height=(format!("{f:.1}")) {}
                    }
                }
            }
            text x="0" y="136" { "60 min ago" }
            text x=(WIDTH) y="136" text-anchor="end" { "now" }
        }
    }
}

/// Failures by kind (timeout, trap, oom, busy...).
pub fn failures(summary: &Summary) -> Markup {
    html! {
        @if summary.by_kind.is_empty() {
            p.hint { "No failed calls in the last hour." }
        } @else {
            table {
                caption.hint style="text-align:left" { "Failed calls by kind, last hour" }
                thead { tr { th scope="col" { "Kind" } th scope="col" { "Calls" } } }
                tbody {
                    @for (kind, count) in &summary.by_kind {
                        tr { td { code { (kind) } } td { (count) } }
                    }
                }
            }
        }
    }
}
