//! The SQLite target end to end: seeds run clean and deterministically,
//! op lists round trip, explore runs clean and catches a plant.
