//! Message type numbers. The versions agree up to FLOW_MOD (14) and part ways after
//! it, so each version has its own table.

/// OpenFlow 1.0 `OFPT_*`.
pub mod v10 {
    /// `OFPT_HELLO`.
    pub const HELLO: u8 = 0;
    /// `OFPT_ERROR`.
    pub const ERROR: u8 = 1;
    /// `OFPT_ECHO_REQUEST`.
    pub const ECHO_REQUEST: u8 = 2;
    /// `OFPT_ECHO_REPLY`.
    pub const ECHO_REPLY: u8 = 3;
    /// `OFPT_VENDOR`.
    pub const VENDOR: u8 = 4;
    /// `OFPT_FEATURES_REQUEST`.
    pub const FEATURES_REQUEST: u8 = 5;
    /// `OFPT_FEATURES_REPLY`.
    pub const FEATURES_REPLY: u8 = 6;
    /// `OFPT_GET_CONFIG_REQUEST`.
    pub const GET_CONFIG_REQUEST: u8 = 7;
    /// `OFPT_GET_CONFIG_REPLY`.
    pub const GET_CONFIG_REPLY: u8 = 8;
    /// `OFPT_SET_CONFIG`.
    pub const SET_CONFIG: u8 = 9;
    /// `OFPT_PACKET_IN`.
    pub const PACKET_IN: u8 = 10;
    /// `OFPT_FLOW_REMOVED`.
    pub const FLOW_REMOVED: u8 = 11;
    /// `OFPT_PORT_STATUS`.
    pub const PORT_STATUS: u8 = 12;
    /// `OFPT_PACKET_OUT`.
    pub const PACKET_OUT: u8 = 13;
    /// `OFPT_FLOW_MOD`.
    pub const FLOW_MOD: u8 = 14;
    /// `OFPT_PORT_MOD`.
    pub const PORT_MOD: u8 = 15;
    /// `OFPT_STATS_REQUEST`.
    pub const STATS_REQUEST: u8 = 16;
    /// `OFPT_STATS_REPLY`.
    pub const STATS_REPLY: u8 = 17;
    /// `OFPT_BARRIER_REQUEST`.
    pub const BARRIER_REQUEST: u8 = 18;
    /// `OFPT_BARRIER_REPLY`.
    pub const BARRIER_REPLY: u8 = 19;
    /// `OFPT_QUEUE_GET_CONFIG_REQUEST`.
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 20;
    /// `OFPT_QUEUE_GET_CONFIG_REPLY`.
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 21;
}

/// OpenFlow 1.3 `OFPT_*`.
pub mod v13 {
    /// `OFPT_HELLO`.
    pub const HELLO: u8 = 0;
    /// `OFPT_ERROR`.
    pub const ERROR: u8 = 1;
    /// `OFPT_ECHO_REQUEST`.
    pub const ECHO_REQUEST: u8 = 2;
    /// `OFPT_ECHO_REPLY`.
    pub const ECHO_REPLY: u8 = 3;
    /// `OFPT_EXPERIMENTER`.
    pub const EXPERIMENTER: u8 = 4;
    /// `OFPT_FEATURES_REQUEST`.
    pub const FEATURES_REQUEST: u8 = 5;
    /// `OFPT_FEATURES_REPLY`.
    pub const FEATURES_REPLY: u8 = 6;
    /// `OFPT_GET_CONFIG_REQUEST`.
    pub const GET_CONFIG_REQUEST: u8 = 7;
    /// `OFPT_GET_CONFIG_REPLY`.
    pub const GET_CONFIG_REPLY: u8 = 8;
    /// `OFPT_SET_CONFIG`.
    pub const SET_CONFIG: u8 = 9;
    /// `OFPT_PACKET_IN`.
    pub const PACKET_IN: u8 = 10;
    /// `OFPT_FLOW_REMOVED`.
    pub const FLOW_REMOVED: u8 = 11;
    /// `OFPT_PORT_STATUS`.
    pub const PORT_STATUS: u8 = 12;
    /// `OFPT_PACKET_OUT`.
    pub const PACKET_OUT: u8 = 13;
    /// `OFPT_FLOW_MOD`.
    pub const FLOW_MOD: u8 = 14;
    /// `OFPT_GROUP_MOD`.
    pub const GROUP_MOD: u8 = 15;
    /// `OFPT_PORT_MOD`.
    pub const PORT_MOD: u8 = 16;
    /// `OFPT_TABLE_MOD`.
    pub const TABLE_MOD: u8 = 17;
    /// `OFPT_MULTIPART_REQUEST`.
    pub const MULTIPART_REQUEST: u8 = 18;
    /// `OFPT_MULTIPART_REPLY`.
    pub const MULTIPART_REPLY: u8 = 19;
    /// `OFPT_BARRIER_REQUEST`.
    pub const BARRIER_REQUEST: u8 = 20;
    /// `OFPT_BARRIER_REPLY`.
    pub const BARRIER_REPLY: u8 = 21;
    /// `OFPT_QUEUE_GET_CONFIG_REQUEST`.
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 22;
    /// `OFPT_QUEUE_GET_CONFIG_REPLY`.
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 23;
    /// `OFPT_ROLE_REQUEST`.
    pub const ROLE_REQUEST: u8 = 24;
    /// `OFPT_ROLE_REPLY`.
    pub const ROLE_REPLY: u8 = 25;
    /// `OFPT_GET_ASYNC_REQUEST`.
    pub const GET_ASYNC_REQUEST: u8 = 26;
    /// `OFPT_GET_ASYNC_REPLY`.
    pub const GET_ASYNC_REPLY: u8 = 27;
    /// `OFPT_SET_ASYNC`.
    pub const SET_ASYNC: u8 = 28;
    /// `OFPT_METER_MOD`.
    pub const METER_MOD: u8 = 29;
}
