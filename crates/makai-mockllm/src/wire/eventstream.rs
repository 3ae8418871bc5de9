//! The AWS binary event stream, written by hand (independently of the client's
//! decoder): each message is a 12-byte prelude (total length, headers length,
//! CRC32 of those 8 bytes), string headers, the payload, and a CRC32 of
//! everything before it (big-endian, CRC-32/ISO-HDLC as in zip and PNG).

use bytes::Bytes;

/// Encodes one message with string headers.
pub(crate) fn message(headers: &[(&str, &str)], payload: &[u8]) -> Bytes {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        head.extend_from_slice(name.as_bytes());
        head.push(7); // string
        head.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap_or(u32::MAX).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    Bytes::from(out)
}

/// An `event` message named `event_type` with a JSON payload.
pub(crate) fn event(event_type: &str, json: &serde_json::Value) -> Bytes {
    message(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        json.to_string().as_bytes(),
    )
}

/// An `exception` message of type `exception_type`.
pub(crate) fn exception(exception_type: &str, message_text: &str) -> Bytes {
    message(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        serde_json::json!({ "message": message_text })
            .to_string()
            .as_bytes(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn crc_is_the_iso_hdlc_crc32() {
        // The check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        let m = super::message(&[], b"");
        assert_eq!(m.len(), 16);
        assert_eq!(&m[..4], &16u32.to_be_bytes());
    }
}
