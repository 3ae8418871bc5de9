//! Reading commands: every command of pi 1.5.2, and any JSON value in any
//! field never panics; a value of the wrong type is an error naming the field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use makai_rpc::{Record, RpcCommand};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Every field a command of pi's reads, with a value of the right type.
const FIELDS: [(&str, &str); 19] = [
    ("prompt", "message"),
    ("prompt", "images"),
    ("prompt", "streamingBehavior"),
    ("steer", "message"),
    ("follow_up", "message"),
    ("new_session", "parentSession"),
    ("set_model", "provider"),
    ("set_thinking_level", "level"),
    ("set_steering_mode", "mode"),
    ("set_follow_up_mode", "mode"),
    ("compact", "customInstructions"),
    ("set_auto_compaction", "enabled"),
    ("set_auto_retry", "enabled"),
    ("bash", "command"),
    ("export_html", "outputPath"),
    ("switch_session", "sessionPath"),
    ("fork", "entryId"),
    ("get_entries", "since"),
    ("set_session_name", "name"),
];

/// A command object with every required field of every command set right.
fn base(kind: &str) -> Map<String, Value> {
    let Value::Object(map) = json!({"type": kind, "id": "x", "message": "m", "provider": "p",
        "modelId": "m", "level": "off", "mode": "all", "enabled": true, "command": "true",
        "sessionPath": "s", "entryId": "e", "name": "n"})
    else {
        unreachable!()
    };
    map
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn every_command_of_pi_1_5_2_is_read() {
    assert_eq!(RpcCommand::NAMES.len(), 33);
    for kind in RpcCommand::NAMES {
        let record = Record::from_value(Value::Object(base(kind)))
            .unwrap_or_else(|e| panic!("{kind}: {}", e.message));
        let Record::Command(request) = record else {
            panic!("{kind} is not a command")
        };
        assert_eq!(request.command.name(), kind);
        assert_eq!(request.id, Some(json!("x")));
    }
}

#[test]
fn unknown_commands_and_non_commands_are_clear_errors() {
    let e = Record::from_value(json!({"type": "warp_drive", "id": 7})).unwrap_err();
    assert_eq!(e.command, "warp_drive");
    assert_eq!(e.message, "Unknown command: warp_drive");
    assert_eq!(e.id, Some(json!(7)));
    let e = Record::parse(b"{not json").unwrap_err();
    assert_eq!(e.command, "parse");
    assert!(e.message.starts_with("Failed to parse command"));
    let e = Record::parse(b"[1]").unwrap_err();
    assert!(e.message.contains("not an array"), "{}", e.message);
}

proptest! {
    /// Any value in any field: never a panic; accepted only when the value
    /// fits, and otherwise an error that names the field.
    #[test]
    fn any_value_in_any_field_is_read_or_named(which in 0..FIELDS.len(), value in any_json()) {
        let (kind, field) = FIELDS[which];
        let mut object = base(kind);
        object.insert(field.to_string(), value.clone());
        match Record::from_value(Value::Object(object)) {
            Ok(Record::Command(request)) => prop_assert_eq!(request.command.name(), kind),
            Ok(Record::UiResponse(_)) => prop_assert!(false, "a command read as a dialog answer"),
            Err(e) => {
                prop_assert_eq!(&e.command, kind);
                prop_assert!(
                    e.message.contains(field),
                    "{kind}.{field} = {value}: the error does not name the field: {}",
                    e.message
                );
            }
        }
    }

    /// Arbitrary bytes as a line: never a panic.
    #[test]
    fn any_line_is_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _outcome = Record::parse(&bytes);
    }
}

#[test]
fn set_limits_reads_the_limits_given_and_names_a_bad_one() {
    let Record::Command(r) = Record::from_value(json!({
        "type": "set_limits", "id": "l", "maxCost": 1.5, "maxTime": "20m"
    }))
    .unwrap() else {
        panic!("set_limits is a command")
    };
    let RpcCommand::SetLimits(limits) = r.command else {
        panic!("{:?}", r.command)
    };
    assert_eq!(limits.max_cost, Some(1.5));
    assert_eq!(limits.max_time, Some(std::time::Duration::from_secs(1200)));
    assert_eq!(limits.max_turns, None);
    for (field, value) in [("maxCost", json!("lots")), ("maxTurns", json!(-1))] {
        let mut object = json!({"type": "set_limits"});
        object[field] = value;
        let e = Record::from_value(object).unwrap_err();
        assert_eq!(e.command, "set_limits");
        assert!(e.message.contains(field), "{}", e.message);
    }
    let e = Record::from_value(json!({"type": "set_limits", "maxDollars": 1})).unwrap_err();
    assert!(e.message.contains("maxDollars"), "{}", e.message);
}
