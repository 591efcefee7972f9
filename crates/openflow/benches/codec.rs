//! Decoding a PACKET_IN and encoding a FLOW_MOD, the two hot paths of the controller,
//! on both wire versions.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use openflow::{
    port, Action, FlowMod, FlowModCommand, Match, Message, PacketIn, PacketInReason, Version,
};

fn packet_in_frame(version: Version) -> Vec<u8> {
    let message = Message::PacketIn(PacketIn {
        buffer_id: None,
        total_len: 64,
        in_port: 3,
        reason: PacketInReason::NoMatch,
        table_id: 0,
        cookie: 0,
        data: (0..64).collect(),
    });
    let mut frame = Vec::new();
    message.emit(version, 7, &mut frame).unwrap();
    frame
}

fn flow_mod() -> Message {
    Message::FlowMod(FlowMod {
        command: FlowModCommand::Add,
        r#match: Match {
            in_port: Some(1),
            eth_dst: Some([0x02, 0, 0, 0, 0, 0x0b]),
            eth_src: Some([0x02, 0, 0, 0, 0, 0x0a]),
            ..Match::default()
        },
        cookie: 0,
        cookie_mask: 0,
        table_id: 0,
        idle_timeout: 60,
        hard_timeout: 0,
        priority: 100,
        buffer_id: None,
        out_port: port::ANY,
        out_group: port::ANY,
        flags: 1,
        meter_id: None,
        actions: vec![Action::Output {
            port: 2,
            max_len: 0,
        }],
        write_metadata: None,
        goto_table: None,
    })
}

fn codec(c: &mut Criterion) {
    for (name, version) in [("1.3", Version::Of13), ("1.0", Version::Of10)] {
        let frame = packet_in_frame(version);
        c.bench_function(&format!("decode {name} PACKET_IN (64-byte frame)"), |b| {
            b.iter(|| Message::parse(black_box(&frame)).unwrap())
        });

        let message = flow_mod();
        let mut out = Vec::with_capacity(256);
        c.bench_function(
            &format!("encode {name} FLOW_MOD (3-field match, 1 output)"),
            |b| {
                b.iter(|| {
                    out.clear();
                    black_box(&message).emit(version, 1, &mut out).unwrap();
                    black_box(out.len())
                })
            },
        );
    }
}

criterion_group!(benches, codec);
criterion_main!(benches);
