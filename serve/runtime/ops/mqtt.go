package ops

import (
	"encoding/binary"
	"errors"
)

// appendMQTTPublish appends an MQTT 3.1.1 PUBLISH packet (OASIS MQTT
// Version 3.1.1, §3.3) at QoS 0: fixed header 0x30, the remaining length
// as a variable byte integer (§2.2.3), the topic as a UTF-8 string with a
// two-byte length, then the payload. topic and payload may alias b's
// spare capacity only if they end before len(b).
func appendMQTTPublish(b, topic, payload []byte) []byte {
	rem := 2 + len(topic) + len(payload)
	b = append(b, 0x30)
	for {
		c := byte(rem % 128)
		rem /= 128
		if rem > 0 {
			c |= 0x80
		}
		b = append(b, c)
		if rem == 0 {
			break
		}
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	return append(b, payload...)
}

// parseMQTTPublish splits a QoS 0 PUBLISH packet into topic and payload.
func parseMQTTPublish(p []byte) (topic, payload []byte, err error) {
	if len(p) < 2 || p[0] != 0x30 {
		return nil, nil, errors.New("ops: mqtt: not a QoS 0 PUBLISH")
	}
	rem, mul, i := 0, 1, 1
	for {
		if i >= len(p) || i > 4 {
			return nil, nil, errors.New("ops: mqtt: bad remaining length")
		}
		c := p[i]
		i++
		rem += int(c&127) * mul
		mul *= 128
		if c&128 == 0 {
			break
		}
	}
	if rem != len(p)-i || rem < 2 {
		return nil, nil, errors.New("ops: mqtt: remaining length does not match")
	}
	n := int(binary.BigEndian.Uint16(p[i:]))
	if 2+n > rem {
		return nil, nil, errors.New("ops: mqtt: topic overruns the packet")
	}
	return p[i+2 : i+2+n], p[i+2+n:], nil
}
