package api

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"unsafe"
)

// float parses a number token already checked against JSON's grammar into
// the float64 nearest its value, exactly as strconv.ParseFloat(tok, 64)
// does; ok is false when the value is outside float64's range.
//
// Observations arrive as shortest round-trip decimals, mostly of up to 17
// significant digits, and parsing them was the largest cost of an act
// request. A token of at most 19 significant digits and a decimal
// exponent in [-pow10Min, pow10Max] is converted here in one pass:
// Clinger's exact fast path when the mantissa fits 53 bits and 10^|e| is
// exact, otherwise the Eisel–Lemire algorithm (D. Lemire, "Number parsing
// at a gigabyte per second", Software: Practice and Experience 51(8),
// 2021; as in Go's internal/strconv). Everything else, and the rare
// halfway case Eisel–Lemire declines, goes to strconv. TestFloatMatchesStrconv
// and FuzzFloat hold it to strconv bit for bit.
func float(tok []byte) (float64, bool) {
	if v, ok := fastFloat(tok); ok {
		return v, true
	}
	// The string aliases the body only for the duration of the call
	// (strconv copies it into any error it returns, which is discarded).
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(tok), len(tok)), 64)
	return v, err == nil && !math.IsInf(v, 0)
}

// Range of decimal exponents the Eisel–Lemire table covers; wider than any
// observation needs, narrow enough that every result is a normal float64
// or caught by the range check.
const (
	pow10Min = -64
	pow10Max = 64
)

// pow10Tab[e-pow10Min] is 10^e as a 128-bit mantissa with its top bit set,
// rounded down: {hi, lo} = ⌊10^e·2^(127−⌊log2 10^e⌋)⌋.
var pow10Tab = func() (t [pow10Max - pow10Min + 1][2]uint64) {
	one, ten := big.NewInt(1), big.NewInt(10)
	mask := new(big.Int).Sub(new(big.Int).Lsh(one, 64), one)
	for e := pow10Min; e <= pow10Max; e++ {
		p := new(big.Int).Exp(ten, big.NewInt(int64(abs(e))), nil)
		var m big.Int
		switch n := p.BitLen(); {
		case e < 0: // ⌊2^(127+n)/10^|e|⌋ lies in (2^127, 2^128)
			m.Quo(new(big.Int).Lsh(one, uint(127+n)), p)
		case n > 128:
			m.Rsh(p, uint(n-128))
		default:
			m.Lsh(p, uint(128-n))
		}
		t[e-pow10Min][1] = new(big.Int).And(&m, mask).Uint64()
		t[e-pow10Min][0] = new(big.Int).Rsh(&m, 64).Uint64()
	}
	return t
}()

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// exact10 holds the powers of ten that float64 represents exactly.
var exact10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat converts a JSON number token whose significand has at most 19
// digits; ok is false when it cannot decide exactly.
func fastFloat(tok []byte) (f float64, ok bool) {
	i := 0
	neg := len(tok) > 0 && tok[0] == '-'
	if neg {
		i++
	}
	var man uint64
	nd, exp10 := 0, 0 // significant digits, decimal exponent
	for ; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
		if man == 0 && tok[i] == '0' {
			continue
		}
		if nd == 19 {
			return 0, false
		}
		man = man*10 + uint64(tok[i]-'0')
		nd++
	}
	if i < len(tok) && tok[i] == '.' {
		for i++; i < len(tok) && tok[i] >= '0' && tok[i] <= '9'; i++ {
			exp10--
			if man == 0 && tok[i] == '0' {
				continue
			}
			if nd == 19 {
				return 0, false
			}
			man = man*10 + uint64(tok[i]-'0')
			nd++
		}
	}
	if i < len(tok) { // exponent: [eE][+-]?digits
		i++
		eneg := false
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			eneg = tok[i] == '-'
			i++
		}
		e := 0
		for ; i < len(tok); i++ {
			if e > 1000 {
				return 0, false
			}
			e = e*10 + int(tok[i]-'0')
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if man == 0 {
		if neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	if man < 1<<53 && exp10 >= -22 && exp10 <= 22 { // Clinger: one correctly rounded operation
		f = float64(man)
		if exp10 < 0 {
			f /= exact10[-exp10]
		} else {
			f *= exact10[exp10]
		}
		if neg {
			f = -f
		}
		return f, true
	}
	if exp10 < pow10Min || exp10 > pow10Max {
		return 0, false
	}
	return eiselLemire64(man, exp10, neg)
}

// eiselLemire64 is Go's internal/strconv eiselLemire64 (BSD licence, The
// Go Authors) over pow10Tab; comments name the sections of
// https://nigeltao.github.io/blog/2020/eisel-lemire.html. man is non-zero.
func eiselLemire64(man uint64, exp10 int, neg bool) (float64, bool) {
	pow := pow10Tab[exp10-pow10Min]
	// Normalization.
	clz := bits.LeadingZeros64(man)
	man <<= uint(clz)
	retExp2 := uint64((exp10*108853)>>15+64+1023) - uint64(clz)
	// Multiplication.
	xHi, xLo := bits.Mul64(man, pow[0])
	// Wider Approximation.
	if xHi&0x1FF == 0x1FF && xLo+man < man {
		yHi, yLo := bits.Mul64(man, pow[1])
		mergedHi, mergedLo := xHi, xLo+yHi
		if mergedLo < xLo {
			mergedHi++
		}
		if mergedHi&0x1FF == 0x1FF && mergedLo+1 == 0 && yLo+man < man {
			return 0, false
		}
		xHi, xLo = mergedHi, mergedLo
	}
	// Shifting to 54 Bits.
	msb := xHi >> 63
	retMantissa := xHi >> (msb + 9)
	retExp2 -= 1 ^ msb
	// Half-way Ambiguity.
	if xLo == 0 && xHi&0x1FF == 0 && retMantissa&3 == 1 {
		return 0, false
	}
	// From 54 to 53 Bits.
	retMantissa += retMantissa & 1
	retMantissa >>= 1
	if retMantissa>>53 > 0 {
		retMantissa >>= 1
		retExp2++
	}
	if retExp2-1 >= 0x7FF-1 { // subnormal, Inf or NaN: leave to strconv
		return 0, false
	}
	bits := retExp2<<52 | retMantissa&(1<<52-1)
	if neg {
		bits |= 1 << 63
	}
	return math.Float64frombits(bits), true
}
