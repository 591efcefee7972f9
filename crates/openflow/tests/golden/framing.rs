//! Frames and failures: a frame's length against its header, messages the codec does
//! not model, emits that fail, and error messages.

use openflow::{frame_len, port, Action, Error, Message, Version};

#[test]
fn unmodelled_messages_come_back_as_other() {
    // 1.0 STATS_REPLY (type 17) of OFPST_DESC.
    let bytes = [0x01, 0x11, 0x00, 0x0c, 0, 0, 0, 1, 0x00, 0x00, 0x00, 0x00];
    let (_, message) = Message::parse(&bytes).unwrap();
    assert_eq!(
        message,
        Message::Other {
            msg_type: 17,
            body: vec![0; 4]
        }
    );
    // 1.3 MULTIPART_REPLY of OFPMP_TABLE (3).
    let bytes = [0x04, 0x13, 0x00, 0x10, 0, 0, 0, 1, 0, 3, 0, 0, 0, 0, 0, 0];
    let (_, message) = Message::parse(&bytes).unwrap();
    assert!(matches!(message, Message::Other { msg_type: 19, .. }));
    // An empty 1.3 MULTIPART_REPLY of OFPMP_FLOW (1) is a flow stats reply now.
    let bytes = [0x04, 0x13, 0x00, 0x10, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0];
    let (_, message) = Message::parse(&bytes).unwrap();
    assert_eq!(
        message,
        Message::FlowStatsReply {
            flows: Vec::new(),
            more: false
        }
    );
}

#[test]
fn frame_must_match_its_header_length() {
    let hello = [0x04, 0x00, 0x00, 0x08, 0, 0, 0, 1];
    assert!(matches!(
        Message::parse(&hello[..7]),
        Err(Error::Truncated { .. })
    ));
    let mut longer = hello.to_vec();
    longer.push(0);
    assert!(matches!(
        Message::parse(&longer),
        Err(Error::BadLength { .. })
    ));
}

#[test]
fn emit_failures_leave_the_buffer_unchanged() {
    let prefix = vec![0xaa; 5];
    let cases = [
        (Version::Of10, Message::PortDescRequest),
        (
            Version::Of10,
            Message::PortDescReply {
                ports: Vec::new(),
                more: false,
            },
        ),
        (
            Version::Of10,
            Message::PacketOut(openflow::PacketOut {
                buffer_id: None,
                in_port: port::CONTROLLER,
                // A port number that 1.0's 16 bits cannot hold.
                actions: vec![Action::Output {
                    port: 0x1_0000,
                    max_len: 0,
                }],
                data: vec![1; 100],
            }),
        ),
        (Version::Of13, Message::EchoRequest(vec![0; 70_000])),
        (Version::Unknown(0x05), Message::BarrierRequest),
        (
            Version::Of13,
            Message::PacketOut(openflow::PacketOut {
                buffer_id: None,
                in_port: 1,
                // 4 + 3 bytes is not a multiple of 8.
                actions: vec![Action::Other {
                    kind: 0xffff,
                    body: vec![1, 2, 3],
                }],
                data: Vec::new(),
            }),
        ),
    ];
    for (version, message) in cases {
        let mut out = prefix.clone();
        let result = message.emit(version, 1, &mut out);
        assert!(result.is_err(), "{message:?} on {version:?}");
        assert_eq!(out, prefix, "{message:?} on {version:?}");
    }
}

#[test]
fn errors_say_what_is_wrong() {
    let error = Message::parse(&[0x01, 0x00, 0x00, 0x04, 0, 0, 0, 0]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "OpenFlow message has an invalid length of 4 bytes"
    );
    assert_eq!(
        Error::UnsupportedVersion(Version::Unknown(2)).to_string(),
        "unsupported OpenFlow wire version 0x02"
    );
}

#[test]
fn frame_len_cases() {
    // Fewer than 8 bytes, length not yet known or known to be fine: wait.
    assert_eq!(frame_len(&[]), Ok(None));
    assert_eq!(frame_len(&[0x04, 0x00, 0x00]), Ok(None));
    assert_eq!(frame_len(&[0x04, 0x00, 0x00, 0x08, 0, 0, 0]), Ok(None));
    // Exactly one message.
    let hello = [0x04, 0x00, 0x00, 0x08, 0, 0, 0, 1];
    assert_eq!(frame_len(&hello), Ok(Some(8)));
    // A message and the start of the next.
    let mut two = hello.to_vec();
    two.extend_from_slice(&hello[..3]);
    assert_eq!(frame_len(&two), Ok(Some(8)));
    // A partial message.
    let echo = [0x04, 0x02, 0x00, 0x0c, 0, 0, 0, 1, 0xaa, 0xbb];
    assert_eq!(frame_len(&echo), Ok(None));
    // A length field below the header size can never be framed.
    assert!(frame_len(&[0x04, 0x00, 0x00, 0x07, 0, 0, 0, 1]).is_err());
    assert!(frame_len(&[0x04, 0x00, 0x00, 0x00]).is_err());
}
