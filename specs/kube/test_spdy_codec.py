"""The SPDY/3.1 frame codec of the Kubernetes API double: frames, header compression, arbitrary chunking."""

from __future__ import annotations

import os
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes.kube import kubectl_builds
from fakes.kube.spdy import (
    DICTIONARY,
    MAX_HEADER_BYTES,
    DataFrame,
    Frame,
    FrameDecoder,
    FrameEncoder,
    GoAway,
    GoAwayStatus,
    HeaderCompressor,
    HeaderDecompressor,
    HeadersFrame,
    Ping,
    ProtocolError,
    RstStatus,
    RstStream,
    Settings,
    SynReply,
    SynStream,
    UnknownControl,
    WindowUpdate,
    encode_data,
    pack_headers,
    unpack_headers,
)

PORT_FORWARD_HEADERS = {"streamtype": ["error"], "port": ["8080"], "requestid": ["0"]}


def test_dictionary_is_the_spdy3_one() -> None:
    assert len(DICTIONARY) == 1423
    assert zlib.adler32(DICTIONARY) == 0xE3C6A7C2  # the dictionary id a zlib peer checks


def test_dictionary_is_byte_identical_to_the_one_inside_kubectl() -> None:
    builds = kubectl_builds.discover()
    if not builds:
        pytest.skip("no kubectl build installed to compare with")
    with open(builds[-1].path, "rb") as f:
        binary = f.read()
    start = binary.find(DICTIONARY[:40])
    assert start >= 0, f"the dictionary's first words are not in {builds[-1].path}"
    assert binary[start : start + len(DICTIONARY)] == DICTIONARY


ALL_FRAMES: list[Frame] = [
    DataFrame(1, b"hello", fin=False),
    DataFrame(3, b"", fin=True),
    DataFrame(2**31 - 1, b"x" * 70_000, fin=True),
    SynStream(1, PORT_FORWARD_HEADERS),
    SynStream(
        5, {"streamtype": ["data"], "port": ["80"]}, fin=True, unidirectional=True, associated_id=3, priority=7, slot=2
    ),
    SynReply(1),
    SynReply(3, {"x-multi": ["a", "b"]}, fin=True),
    HeadersFrame(7, {"trailer": ["1"]}, fin=True),
    RstStream(9, RstStatus.CANCEL),
    Settings(((0, 4, 1000), (1, 7, 65536)), clear=True),
    Settings(),
    Ping(1),
    Ping(0xFFFFFFFF),
    GoAway(11, GoAwayStatus.INTERNAL_ERROR),
    WindowUpdate(1, 2**31 - 1),
    UnknownControl(42, 0x5, b"opaque"),
]


def test_every_frame_type_round_trips() -> None:
    encoder = FrameEncoder()
    wire = b"".join(encoder.encode(frame) for frame in ALL_FRAMES)
    assert FrameDecoder().feed(wire) == ALL_FRAMES


def test_data_frame_flags_are_the_high_byte_of_the_length_word() -> None:
    # DATA: 31-bit stream id, then flags (8 bits) and length (24 bits). A reader taking the flags from
    # another byte sees every FIN wrong.
    wire = encode_data(5, b"abc", fin=True)
    assert wire == struct.pack(">II", 5, 0x01_000003) + b"abc"
    assert FrameDecoder().feed(wire) == [DataFrame(5, b"abc", fin=True)]


def test_control_frame_header_layout() -> None:
    wire = FrameEncoder().encode(Ping(7))
    assert wire == bytes.fromhex("80030006 00000004 00000007")
    rst = FrameEncoder().encode(RstStream(3, RstStatus.PROTOCOL_ERROR))
    assert rst == bytes.fromhex("80030003 00000008 00000003 00000001")


def test_header_blocks_share_one_zlib_stream_per_direction() -> None:
    encoder = FrameEncoder()
    first = encoder.encode(SynStream(1, PORT_FORWARD_HEADERS))
    second = encoder.encode(SynStream(3, {**PORT_FORWARD_HEADERS, "streamtype": ["data"]}))
    decoder = FrameDecoder()
    assert decoder.feed(first) == [SynStream(1, PORT_FORWARD_HEADERS)]
    assert decoder.feed(second) == [SynStream(3, {**PORT_FORWARD_HEADERS, "streamtype": ["data"]})]
    # The second block continues the first's zlib stream: no zlib header of its own, so alone it does not inflate.
    with pytest.raises(ProtocolError, match="does not inflate"):
        FrameDecoder().feed(second)


def test_later_blocks_compress_against_the_earlier_ones() -> None:
    compressor = HeaderCompressor()
    sizes = [len(compressor.compress(PORT_FORWARD_HEADERS)) for _ in range(3)]
    assert sizes[1] < sizes[0]  # the repeat is found in the stream's window


def test_a_fresh_compressor_per_block_is_not_what_a_peer_can_read() -> None:
    # The mistake the codec guards against: each block with its own zlib header breaks the peer's single stream.
    decompressor = HeaderDecompressor()
    assert decompressor.decompress(HeaderCompressor().compress({"a": ["1"]})) == {"a": ["1"]}
    with pytest.raises(ProtocolError):
        decompressor.decompress(HeaderCompressor().compress({"b": ["2"]}))


def test_each_block_ends_on_a_sync_flush() -> None:
    block = HeaderCompressor().compress(PORT_FORWARD_HEADERS)
    assert block.endswith(b"\x00\x00\xff\xff")  # Z_SYNC_FLUSH: the peer can inflate it without more bytes


def test_header_block_values_and_multi_values() -> None:
    raw = pack_headers({"Port": "8080", "x": ["a", "b"]})
    assert raw == (
        struct.pack(">I", 2)
        + struct.pack(">I", 4)
        + b"port"
        + struct.pack(">I", 4)
        + b"8080"
        + struct.pack(">I", 1)
        + b"x"
        + struct.pack(">I", 3)
        + b"a\0b"
    )
    assert unpack_headers(raw) == {"port": ["8080"], "x": ["a", "b"]}


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (struct.pack(">I", 1), "truncated"),
        (struct.pack(">II", 1, 4) + b"Port" + struct.pack(">I", 0), "not lower-case"),
        (struct.pack(">II", 1, 0) + struct.pack(">I", 0), "empty"),
        (struct.pack(">I", 0) + b"junk", "after its 0 pairs"),
    ],
)
def test_malformed_header_blocks_are_protocol_errors(raw: bytes, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        unpack_headers(raw)


def test_a_header_block_inflating_past_the_limit_is_refused_not_buffered() -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
    bomb = compressor.compress(b"\0" * (MAX_HEADER_BYTES * 4)) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert len(bomb) < 4096
    with pytest.raises(ProtocolError, match="more than"):
        HeaderDecompressor().decompress(bomb)


def test_other_spdy_versions_are_refused() -> None:
    v2_ping = struct.pack(">HHI", 0x8002, 6, 4) + struct.pack(">I", 1)
    with pytest.raises(ProtocolError, match="version 2"):
        FrameDecoder().feed(v2_ping)


def test_short_control_frames_are_protocol_errors() -> None:
    short_ping = struct.pack(">HHI", 0x8003, 6, 2) + b"\0\0"
    with pytest.raises(ProtocolError, match="too short"):
        FrameDecoder().feed(short_ping)
    bad_settings = struct.pack(">HHI", 0x8003, 4, 8) + struct.pack(">II", 3, 0)
    with pytest.raises(ProtocolError, match="SETTINGS says 3 entries"):
        FrameDecoder().feed(bad_settings)


def test_encoder_refuses_what_spdy_cannot_carry() -> None:
    with pytest.raises(ValueError, match="stream id"):
        encode_data(0, b"")
    with pytest.raises(ValueError, match="exceeds"):
        encode_data(1, b"\0" * (2**24))


def test_partial_frames_wait_for_the_rest() -> None:
    wire = FrameEncoder().encode(SynStream(1, PORT_FORWARD_HEADERS)) + encode_data(1, b"payload")
    decoder = FrameDecoder()
    assert decoder.feed(wire[:7]) == []
    assert decoder.feed(wire[7:20]) == []
    assert decoder.buffered == 20
    assert decoder.feed(wire[20:]) == [SynStream(1, PORT_FORWARD_HEADERS), DataFrame(1, b"payload")]
    assert decoder.buffered == 0


header_values = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
frames = st.one_of(
    st.builds(DataFrame, st.integers(1, 2**31 - 1), st.binary(max_size=300), st.booleans()),
    st.builds(
        SynStream,
        st.integers(1, 2**31 - 1).filter(lambda i: i % 2 == 1),
        st.fixed_dictionaries(
            {
                "streamtype": st.lists(header_values, min_size=1, max_size=2),
                "port": st.lists(header_values, min_size=1, max_size=1),
            }
        ),
        st.booleans(),
    ),
    st.builds(SynReply, st.integers(1, 2**31 - 1)),
    st.builds(Ping, st.integers(0, 2**32 - 1)),
    st.builds(RstStream, st.integers(1, 2**31 - 1), st.integers(1, 11)),
    st.builds(WindowUpdate, st.integers(1, 2**31 - 1), st.integers(1, 2**31 - 1)),
)


@settings(max_examples=150 if os.environ.get("CI") else 60, deadline=None)
@given(st.lists(frames, min_size=1, max_size=12), st.lists(st.integers(1, 64), min_size=1, max_size=40))
def test_any_chunking_of_any_frame_sequence_decodes_to_the_same_frames(sent: list, cuts: list[int]) -> None:
    encoder = FrameEncoder()  # one encoder for the sequence: its header blocks share one zlib stream
    wire = b"".join(encoder.encode(frame) for frame in sent)
    decoder = FrameDecoder()
    got = []
    at, index = 0, 0
    while at < len(wire):
        size = cuts[index % len(cuts)]
        got += decoder.feed(wire[at : at + size])
        at += size
        index += 1
    assert got == sent
    assert decoder.buffered == 0
