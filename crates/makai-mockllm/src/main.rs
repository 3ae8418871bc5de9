//! `makai-mockllm`: serve a scripted LLM on 127.0.0.1 until killed.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use makai_mockllm::{
    BenchPacing, MockServer, Scenario, ServerOptions, bench_responder_in_paragraphs,
};

/// A scripted LLM server speaking OpenAI Chat Completions, OpenAI Responses,
/// Anthropic Messages and Gemini streaming over real HTTP on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "makai-mockllm", version)]
struct Args {
    /// JSON scenario file (an array of responses, or {"responses": [...], "fallback": {...}}).
    /// Without it (and without --bench-tokens) every request gets a short friendly text.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Port on 127.0.0.1 (0 = ephemeral).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Answer with the standard agent-loop bench script streaming this many tokens per response.
    #[arg(long, value_name = "TOKENS", conflicts_with = "scenario")]
    bench_tokens: Option<usize>,
    /// Tool rounds of the bench script (with --bench-tokens).
    #[arg(
        long,
        value_name = "ROUNDS",
        default_value_t = 0,
        requires = "bench_tokens"
    )]
    bench_tool_rounds: usize,
    /// Bench script: write each SSE event on its own, as a provider streaming
    /// token by token does (default: each response in one write).
    #[arg(long, requires = "bench_tokens")]
    bench_stream: bool,
    /// Bench script: stream the events this many microseconds apart (implies
    /// --bench-stream; the timer's precision is 1 ms).
    #[arg(long, value_name = "MICROSECONDS", requires = "bench_tokens")]
    bench_delay_us: Option<u64>,
    /// Bench script: end a paragraph every this many tokens (a blank line
    /// after the token; default: the answer is one paragraph).
    #[arg(long, value_name = "TOKENS", requires = "bench_tokens")]
    bench_paragraph: Option<usize>,
    /// Do not keep requests in memory (for long benchmark runs).
    #[arg(long)]
    no_record: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let scenario = match (&args.scenario, args.bench_tokens) {
        (Some(path), _) => match Scenario::from_file(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
        (None, Some(tokens)) => {
            let pacing = match (args.bench_stream, args.bench_delay_us) {
                (false, None) => BenchPacing::Replay,
                (_, delay) => BenchPacing::Stream {
                    delay: Duration::from_micros(delay.unwrap_or(0)),
                },
            };
            Scenario::from_responder(bench_responder_in_paragraphs(
                tokens,
                args.bench_tool_rounds,
                pacing,
                args.bench_paragraph.unwrap_or(0),
            ))
        }
        (None, None) => Scenario::friendly(),
    };
    let options = ServerOptions {
        port: args.port,
        record_requests: !args.no_record,
        // A long-running server: clients' requests are checked by their tests.
        check_invariants_on_drop: false,
    };
    let server = match MockServer::start_with(scenario, options).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "listening on {}", server.url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("mockllm: cannot wait for ctrl-c ({e}); serving until killed");
        std::future::pending::<()>().await;
    }
    drop(server);
    ExitCode::SUCCESS
}
