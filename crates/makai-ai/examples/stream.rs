//! Streams one reply through the real provider code.
//!
//! Without arguments it starts makai's scripted LLM server on 127.0.0.1 and
//! streams from it, so it runs without an API key:
//!
//! ```text
//! cargo run -p makai-ai --example stream
//! cargo run -p makai-ai --example stream -- anthropic/claude-haiku-4-5 "Say hi"   # needs ANTHROPIC_API_KEY
//! ```

use std::io::Write;

use futures::StreamExt;
use makai_ai::catalog::ModelRegistry;
use makai_ai::{Api, AssistantMessageEvent, Context, Model, StreamOptions, UserMessage, stream};
use makai_mockllm::{MockServer, Scenario, ScriptedResponse};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model_spec = args.next();
    let prompt = args
        .next()
        .unwrap_or_else(|| "Tell me about makai in one sentence.".to_string());

    // Keep the server alive for the whole run when we use it.
    let mut _server = None;
    let model = match model_spec {
        Some(spec) => ModelRegistry::builtin()
            .find(&spec)
            .cloned()
            .ok_or(format!("unknown model '{spec}'"))?,
        None => {
            let server = MockServer::start(Scenario::new().push(
                ScriptedResponse::text(
                    "makai is an agent runtime in Rust: one message model, streaming providers, \
                     and an agent loop that never lets a failing tool take it down.",
                )
                .with_thinking("The user wants a one-sentence summary.")
                .delay(15),
            ))
            .await?;
            let model = Model::custom(
                Api::OpenAiCompletions,
                "mockllm",
                "scripted",
                server.base_url_v1(),
            );
            _server = Some(server);
            model
        }
    };

    let context = Context {
        messages: vec![UserMessage::text(prompt).into()],
        ..Default::default()
    };
    let mut events = stream(&model, &context, StreamOptions::default());
    let mut out = std::io::stdout();
    while let Some(event) = events.next().await {
        match event {
            AssistantMessageEvent::ThinkingDelta { delta, .. } => eprint!("\x1b[2m{delta}\x1b[0m"),
            AssistantMessageEvent::ThinkingEnd { .. } => eprintln!(),
            AssistantMessageEvent::TextDelta { delta, .. } => {
                print!("{delta}");
                out.flush()?;
            }
            AssistantMessageEvent::Done { message, .. } => {
                println!();
                eprintln!(
                    "[{} via {}: stop={}, {} in / {} out tokens, ${:.6}]",
                    message.model,
                    message.api,
                    message.stop_reason.as_str(),
                    message.usage.input,
                    message.usage.output,
                    message.usage.cost.total
                );
            }
            AssistantMessageEvent::Error { error, .. } => {
                eprintln!("\nerror: {}", error.error_message.unwrap_or_default());
                std::process::exit(1);
            }
            _ => {}
        }
    }
    Ok(())
}
