/*
 * SPDX-License-Identifier: Apache-2.0
 *
 * tflm_peer: the peer of synaptic's interpreter benchmark. TensorFlow Lite
 * Micro with Arm's CMSIS-NN kernels runs the networks and inputs that
 * tests/tflite_golden runs on synaptic's interpreter, on the same emulated
 * core (mps2/an521/cpu0 with the MCXN947's DSP extension and FPU), and
 * prints the same lines, so that scripts/peer-bench.sh (which builds and
 * runs both, then calls scripts/peer_report.py) reads both with one parser:
 *
 *   tflm_peer: <name>/<input> MATCH|DIFFERS (...), <C> emulated cycles
 *   tflm_peer: <name>: <N> emulated cycles/inference, <M> MACs,
 *              <a>.<bb> emulated cycles/MAC, arena <B> B
 *   tflm_peer: profile <name> op <i> <C>
 *   tflm_peer: DONE
 *
 * The inputs are those of tests/tflite_golden, bit for bit: the shipped
 * person_detect and micro_speech inputs (byte ^ 0x80), compared byte by
 * byte with models/golden/<model>.txt, and inputs 0..2 of each MLPerf Tiny
 * network (models/networks/) from scripts/opgolden.py's xorshift32 stream,
 * whose outputs' FNV-1a 64 is compared with the network's .expect file
 * (LiteRT's reference kernels). CMSIS-NN is not bit-exact with the
 * reference kernels on every network: a difference is reported (DIFFERS),
 * it is not a failure. Cycles are k_cycle_get_32 ticks around Invoke()
 * (QEMU -icount: deterministic), averaged over the inputs; MACs are those
 * of the CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED operators, counted
 * from the flatbuffer; arena is MicroInterpreter::arena_used_bytes().
 * The per-operator profile lines (tests/tflite_golden prints the same for
 * ours) come from one more Invoke() with a profiler attached, after the
 * timed ones, so the profiler's calls are not in the timed figures.
 */

#include <zephyr/kernel.h>
#include <zephyr/sys/printk.h>

#include <cstdint>
#include <cstring>

#include "tensorflow/compiler/mlir/lite/schema/schema_utils.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/micro/micro_profiler_interface.h"
#include "tensorflow/lite/schema/schema_generated.h"

/* The benchmark is of the MCXN947's CPU0: CMSIS-NN must take its DSP paths. */
#if !defined(__ARM_FEATURE_DSP) || (__ARM_FEATURE_DSP != 1)
#error "tflm_peer needs the DSP extension (CONFIG_SYNAPTIC_EMULATE_MCXN947_CPU0=y)"
#endif
#if !defined(__ARM_FP)
#error "tflm_peer needs the FPU (CONFIG_FPU=y)"
#endif

namespace {

/* Embedded files (CMakeLists.txt: generate_inc_file_for_target). */
alignas(16) const uint8_t person_detect_model[] = {
#include "peer/person_detect.tflite.inc"
};
alignas(16) const uint8_t micro_speech_model[] = {
#include "peer/micro_speech.tflite.inc"
};
const uint8_t person_input[] = {
#include "peer/person.u8.inc"
};
const uint8_t no_person_input[] = {
#include "peer/no_person.u8.inc"
};
const uint8_t yes_input[] = {
#include "peer/yes.u8.inc"
};
const uint8_t no_input[] = {
#include "peer/no.u8.inc"
};
const char person_detect_golden[] = {
#include "peer/person_detect.txt.inc"
	0};
const char micro_speech_golden[] = {
#include "peer/micro_speech.txt.inc"
	0};
alignas(16) const uint8_t vww_model[] = {
#include "peer/vww.tflite.inc"
};
const char vww_expect[] = {
#include "peer/vww.tflite.expect.inc"
	0};
alignas(16) const uint8_t resnet8_model[] = {
#include "peer/resnet8.tflite.inc"
};
const char resnet8_expect[] = {
#include "peer/resnet8.tflite.expect.inc"
	0};
alignas(16) const uint8_t dscnn_model[] = {
#include "peer/dscnn.tflite.inc"
};
const char dscnn_expect[] = {
#include "peer/dscnn.tflite.expect.inc"
	0};
alignas(16) const uint8_t autoencoder_model[] = {
#include "peer/autoencoder.tflite.inc"
};
const char autoencoder_expect[] = {
#include "peer/autoencoder.tflite.expect.inc"
	0};
alignas(16) const uint8_t speech_v2_model[] = {
#include "peer/speech_v2.tflite.inc"
};
const char speech_v2_expect[] = {
#include "peer/speech_v2.tflite.expect.inc"
	0};

struct Input {
	const char *name;
	const uint8_t *data;
	size_t size;
};

/* A model with its shipped inputs and golden outputs (tests/tflite_golden's CASES). */
struct Case {
	const char *name;
	const uint8_t *model;
	const char *golden;
	Input inputs[2];
};

const Case cases[] = {
	{"person_detect",
	 person_detect_model,
	 person_detect_golden,
	 {{"person", person_input, sizeof(person_input)},
	  {"no_person", no_person_input, sizeof(no_person_input)}}},
	{"micro_speech",
	 micro_speech_model,
	 micro_speech_golden,
	 {{"yes", yes_input, sizeof(yes_input)}, {"no", no_input, sizeof(no_input)}}},
};

/* An MLPerf Tiny network with its .expect file (tests/tflite_golden's NETWORKS). */
struct Network {
	const char *name;
	const uint8_t *model;
	const char *expect;
};

const Network networks[] = {
	{"vww", vww_model, vww_expect},
	{"resnet8", resnet8_model, resnet8_expect},
	{"dscnn", dscnn_model, dscnn_expect},
	{"autoencoder", autoencoder_model, autoencoder_expect},
	{"speech_v2", speech_v2_model, speech_v2_expect},
};

/* Inputs 0..NETWORK_INPUTS-1 of each network, as tests/tflite_golden. */
constexpr uint32_t NETWORK_INPUTS = 3;
constexpr size_t MAX_OUTPUT = 16;
constexpr size_t MAX_OUTPUTS = 8;

/* One arena for whichever network runs; generous (an521's CPU0 has 4 MB). */
constexpr size_t ARENA_SIZE = 160 * 1024;
alignas(16) uint8_t arena[ARENA_SIZE];

/* Every operator the networks use, with TFLite Micro's CMSIS-NN kernels
 * wherever it has one (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
 * AVERAGE_POOL_2D, SOFTMAX, ADD).
 */
using Resolver = tflite::MicroMutableOpResolver<9>;

void add_ops(Resolver &resolver)
{
	resolver.AddConv2D();
	resolver.AddDepthwiseConv2D();
	resolver.AddFullyConnected();
	resolver.AddAveragePool2D();
	resolver.AddReshape();
	resolver.AddSoftmax();
	resolver.AddAdd();
	resolver.AddQuantize();
	resolver.AddDequantize();
}

/* scripts/opgolden.py's input k for graph input i, written into slot:
 * xorshift32; a float32 tensor gets (next() >> 8) * 2^-21 - 4 per element,
 * any other one byte per step (tests/tflite_golden's fill_input).
 */
void fill_input(uint32_t k, uint32_t i, bool float32, uint8_t *slot, size_t size)
{
	const float step = 1.0f / (float)(1u << 21);
	uint32_t x = 0x9E3779B9u * (k + 1) + 0x7F4A7C15u * (i + 1);

	if (x == 0) {
		x = 1;
	}
	auto next = [&x]() {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		return x;
	};
	if (float32) {
		for (size_t at = 0; at + 4 <= size; at += 4) {
			/* (next() >> 8) * 2^-21 is exact (24 bits times a power
			 * of two), so a fused multiply-add rounds as Rust does.
			 */
			float v = (float)(next() >> 8) * step - 4.0f;

			memcpy(slot + at, &v, 4); /* little-endian, as to_le_bytes */
		}
	} else {
		for (size_t at = 0; at < size; at++) {
			slot[at] = (uint8_t)next();
		}
	}
}

uint64_t fnv1a64(const uint8_t *bytes, size_t size)
{
	uint64_t h = 0xCBF29CE484222325ull;

	for (size_t i = 0; i < size; i++) {
		h = (h ^ bytes[i]) * 0x00000100000001B3ull;
	}
	return h;
}

int hex_digit(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

/* The next line of text at *at (advanced past it); false at the end. */
bool next_line(const char **at, const char **line, size_t *len)
{
	const char *s = *at;

	if (*s == '\0') {
		return false;
	}
	const char *end = strchr(s, '\n');

	if (end == nullptr) {
		end = s + strlen(s);
	}
	*line = s;
	*len = (size_t)(end - s);
	*at = *end ? end + 1 : end;
	return true;
}

/* The golden output bytes of input (a "<name> <hex>" line); -1 without one. */
int golden_bytes(const char *golden, const char *input, uint8_t out[MAX_OUTPUT])
{
	const char *at = golden, *line;
	size_t len, name_len = strlen(input);

	while (next_line(&at, &line, &len)) {
		if (len <= name_len || strncmp(line, input, name_len) != 0 ||
		    line[name_len] != ' ') {
			continue;
		}
		const char *hex = line + name_len + 1;
		size_t hex_len = len - name_len - 1;

		while (hex_len > 0 && (hex[hex_len - 1] == '\r' || hex[hex_len - 1] == ' ')) {
			hex_len--;
		}
		if (hex_len % 2 != 0 || hex_len / 2 > MAX_OUTPUT) {
			return -1;
		}
		for (size_t i = 0; i < hex_len / 2; i++) {
			int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

			if (hi < 0 || lo < 0) {
				return -1;
			}
			out[i] = (uint8_t)(hi * 16 + lo);
		}
		return (int)(hex_len / 2);
	}
	return -1;
}

/* The hashes of input k in an .expect file ("<k> <hash>..." lines); -1 without its line. */
int expected_hashes(const char *expect, uint32_t k, uint64_t out[MAX_OUTPUTS])
{
	const char *at = expect, *line;
	size_t len;

	while (next_line(&at, &line, &len)) {
		if (len == 0 || line[0] == '#') {
			continue;
		}
		size_t pos = 0;
		uint32_t index = 0;

		while (pos < len && line[pos] >= '0' && line[pos] <= '9') {
			index = index * 10 + (uint32_t)(line[pos] - '0');
			pos++;
		}
		if (pos == 0 || index != k) {
			continue;
		}
		int n = 0;

		while (pos < len) {
			while (pos < len && (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\r')) {
				pos++;
			}
			if (pos >= len) {
				break;
			}
			uint64_t value = 0;
			size_t digits = 0;

			while (pos < len && hex_digit(line[pos]) >= 0) {
				value = value * 16 + (uint64_t)hex_digit(line[pos]);
				pos++;
				digits++;
			}
			if (digits != 16 || n >= (int)MAX_OUTPUTS) {
				return -1;
			}
			out[n++] = value;
		}
		return n;
	}
	return -1;
}

uint64_t elements(const flatbuffers::Vector<int32_t> *shape)
{
	uint64_t n = 1;

	if (shape == nullptr) {
		return 0;
	}
	for (int32_t d : *shape) {
		n *= (uint64_t)(d > 0 ? d : 1);
	}
	return n;
}

/* Multiply-accumulates of the CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED
 * operators, from the model's shapes.
 */
uint64_t count_macs(const tflite::Model *model)
{
	uint64_t macs = 0;
	const auto *subgraphs = model->subgraphs();
	const auto *codes = model->operator_codes();

	if (subgraphs == nullptr || subgraphs->size() == 0 || codes == nullptr) {
		return 0;
	}
	const tflite::SubGraph *graph = subgraphs->Get(0);
	const auto *tensors = graph->tensors();

	if (graph->operators() == nullptr || tensors == nullptr) {
		return 0;
	}
	for (const tflite::Operator *op : *graph->operators()) {
		tflite::BuiltinOperator code = tflite::GetBuiltinCode(codes->Get(op->opcode_index()));
		const auto *inputs = op->inputs();
		const auto *outputs = op->outputs();

		if (inputs == nullptr || inputs->size() < 2 || outputs == nullptr ||
		    outputs->size() < 1) {
			continue;
		}
		const auto *filter = tensors->Get(inputs->Get(1))->shape();
		uint64_t out = elements(tensors->Get(outputs->Get(0))->shape());

		if (filter == nullptr) {
			continue;
		}
		switch (code) {
		case tflite::BuiltinOperator_CONV_2D: /* filter [O, KH, KW, I] */
			if (filter->size() == 4) {
				macs += out * (uint64_t)filter->Get(1) * (uint64_t)filter->Get(2) *
					(uint64_t)filter->Get(3);
			}
			break;
		case tflite::BuiltinOperator_DEPTHWISE_CONV_2D: /* filter [1, KH, KW, O] */
			if (filter->size() == 4) {
				macs += out * (uint64_t)filter->Get(1) * (uint64_t)filter->Get(2);
			}
			break;
		case tflite::BuiltinOperator_FULLY_CONNECTED: /* weights [U, I] */
			if (filter->size() >= 2) {
				macs += out * (uint64_t)filter->Get(filter->size() - 1);
			}
			break;
		default:
			break;
		}
	}
	return macs;
}

/* The summary line, in tests/tflite_golden's shape. */
void summary(const char *name, const tflite::Model *model, const tflite::MicroInterpreter &interpreter,
	     uint64_t total, uint64_t runs)
{
	uint64_t per_inference = total / (runs ? runs : 1);
	uint64_t macs = count_macs(model);
	uint64_t centi = per_inference * 100 / (macs ? macs : 1);

	printk("tflm_peer: %s: %u emulated cycles/inference, %u MACs, %u.%02u emulated cycles/MAC, "
	       "arena %u B\n",
	       name, (unsigned int)per_inference, (unsigned int)macs, (unsigned int)(centi / 100),
	       (unsigned int)(centi % 100), (unsigned int)interpreter.arena_used_bytes());
}

/* One Invoke() and the k_cycle_get_32 ticks it took. */
TfLiteStatus timed_invoke(tflite::MicroInterpreter &interpreter, uint32_t *spent)
{
	uint32_t start = k_cycle_get_32();
	TfLiteStatus status = interpreter.Invoke();

	*spent = k_cycle_get_32() - start;
	return status;
}

const tflite::Model *load(const char *name, const uint8_t *bytes)
{
	const tflite::Model *model = tflite::GetModel(bytes);

	if (model->version() != TFLITE_SCHEMA_VERSION) {
		printk("tflm_peer: %s ERROR schema version %u\n", name, (unsigned int)model->version());
		return nullptr;
	}
	return model;
}

/* The ticks of each operator of one Invoke(), in execution order. */
class OpProfiler : public tflite::MicroProfilerInterface {
public:
	uint32_t BeginEvent(const char *tag) override
	{
		(void)tag;
		if (count_ == MAX_EVENTS) {
			return MAX_EVENTS;
		}
		start_[count_] = k_cycle_get_32();
		return count_++;
	}

	void EndEvent(uint32_t event) override
	{
		if (event < MAX_EVENTS) {
			spent_[event] = k_cycle_get_32() - start_[event];
		}
	}

	void print(const char *name) const
	{
		for (uint32_t i = 0; i < count_; i++) {
			printk("tflm_peer: profile %s op %u %u\n", name, (unsigned int)i,
			       (unsigned int)spent_[i]);
		}
	}

private:
	static constexpr uint32_t MAX_EVENTS = 128;
	uint32_t start_[MAX_EVENTS] = {};
	uint32_t spent_[MAX_EVENTS] = {};
	uint32_t count_ = 0;
};

/* One profiled Invoke() of a model on input 0 of the xorshift stream. */
void profile(const char *name, const tflite::Model *model, const Resolver &resolver)
{
	static OpProfiler profiler;

	profiler = OpProfiler();
	tflite::MicroInterpreter interpreter(model, resolver, arena, ARENA_SIZE, nullptr, &profiler);

	if (interpreter.AllocateTensors() != kTfLiteOk) {
		return;
	}
	for (size_t i = 0; i < interpreter.inputs_size(); i++) {
		TfLiteTensor *slot = interpreter.input(i);

		fill_input(0, (uint32_t)i, slot->type == kTfLiteFloat32, slot->data.uint8,
			   slot->bytes);
	}
	/* Allocation and the first Invoke's preparation emit no per-op events
	 * after Invoke() starts: the profile is of the operators alone. */
	profiler = OpProfiler();
	if (interpreter.Invoke() == kTfLiteOk) {
		profiler.print(name);
	}
}

/* Runs the shipped inputs of a case; false if TFLite Micro refused it. */
bool run_case(const Case &c, const Resolver &resolver)
{
	const tflite::Model *model = load(c.name, c.model);

	if (model == nullptr) {
		return false;
	}
	tflite::MicroInterpreter interpreter(model, resolver, arena, ARENA_SIZE);

	if (interpreter.AllocateTensors() != kTfLiteOk) {
		printk("tflm_peer: %s ERROR AllocateTensors\n", c.name);
		return false;
	}
	uint64_t total = 0;
	bool ok = true;

	for (const Input &input : c.inputs) {
		TfLiteTensor *slot = interpreter.input(0);

		if (slot == nullptr || slot->bytes != input.size) {
			printk("tflm_peer: %s/%s ERROR input size\n", c.name, input.name);
			return false;
		}
		for (size_t i = 0; i < input.size; i++) {
			slot->data.uint8[i] = input.data[i] ^ 0x80;
		}
		uint32_t spent;

		if (timed_invoke(interpreter, &spent) != kTfLiteOk) {
			printk("tflm_peer: %s/%s ERROR Invoke\n", c.name, input.name);
			ok = false;
			continue;
		}
		total += spent;
		const TfLiteTensor *out = interpreter.output(0);
		uint8_t want[MAX_OUTPUT];
		int n = golden_bytes(c.golden, input.name, want);

		if (n < 0) {
			printk("tflm_peer: %s/%s ERROR no golden line\n", c.name, input.name);
			ok = false;
			continue;
		}
		size_t differing = 0;

		if (out->bytes == (size_t)n) {
			for (int i = 0; i < n; i++) {
				differing += out->data.uint8[i] != want[i];
			}
		} else {
			differing = out->bytes > (size_t)n ? out->bytes : (size_t)n;
		}
		printk("tflm_peer: %s/%s %s (%u of %d bytes differ from LiteRT's), %u emulated cycles\n",
		       c.name, input.name, differing == 0 ? "MATCH" : "DIFFERS", (unsigned int)differing,
		       n, (unsigned int)spent);
		printk("tflm_peer:   scores");
		for (size_t i = 0; i < out->bytes && i < MAX_OUTPUT; i++) {
			printk(" %d", (int)out->data.int8[i]);
		}
		printk(", LiteRT");
		for (int i = 0; i < n; i++) {
			printk(" %d", (int)(int8_t)want[i]);
		}
		printk("\n");
	}
	summary(c.name, model, interpreter, total, sizeof(c.inputs) / sizeof(c.inputs[0]));
	return ok;
}

/* Runs inputs 0..NETWORK_INPUTS-1 of a network; false if TFLite Micro refused it. */
bool run_network(const Network &network, const Resolver &resolver)
{
	const tflite::Model *model = load(network.name, network.model);

	if (model == nullptr) {
		return false;
	}
	tflite::MicroInterpreter interpreter(model, resolver, arena, ARENA_SIZE);

	if (interpreter.AllocateTensors() != kTfLiteOk) {
		printk("tflm_peer: %s ERROR AllocateTensors\n", network.name);
		return false;
	}
	uint64_t total = 0, runs = 0;
	bool ok = true;

	for (uint32_t k = 0; k < NETWORK_INPUTS; k++) {
		uint64_t want[MAX_OUTPUTS];
		int n = expected_hashes(network.expect, k, want);

		if (n < 0) {
			printk("tflm_peer: %s/%u ERROR no expect line\n", network.name, k);
			ok = false;
			continue;
		}
		if ((size_t)n != interpreter.outputs_size()) {
			printk("tflm_peer: %s/%u ERROR %d hashes for %u outputs\n", network.name, k, n,
			       (unsigned int)interpreter.outputs_size());
			ok = false;
			continue;
		}
		for (size_t i = 0; i < interpreter.inputs_size(); i++) {
			TfLiteTensor *slot = interpreter.input(i);

			fill_input(k, (uint32_t)i, slot->type == kTfLiteFloat32, slot->data.uint8,
				   slot->bytes);
		}
		uint32_t spent;

		if (timed_invoke(interpreter, &spent) != kTfLiteOk) {
			printk("tflm_peer: %s/%u ERROR Invoke\n", network.name, k);
			ok = false;
			continue;
		}
		total += spent;
		runs++;
		int differing = 0;

		for (int o = 0; o < n; o++) {
			const TfLiteTensor *out = interpreter.output(o);
			uint64_t got = fnv1a64(out->data.uint8, out->bytes);

			if (got != want[o]) {
				differing++;
				printk("tflm_peer: %s/%u output %d: FNV-1a 64 %08x%08x, LiteRT %08x%08x\n",
				       network.name, k, o, (unsigned int)(got >> 32), (unsigned int)got,
				       (unsigned int)(want[o] >> 32), (unsigned int)want[o]);
			}
		}
		printk("tflm_peer: %s/%u %s (%d of %d output hashes differ from LiteRT's), %u emulated "
		       "cycles\n",
		       network.name, k, differing == 0 ? "MATCH" : "DIFFERS", differing, n,
		       (unsigned int)spent);
	}
	summary(network.name, model, interpreter, total, runs);
	return ok;
}

} /* namespace */

int main(void)
{
	static Resolver resolver;

	add_ops(resolver);
	printk("tflm_peer: TFLite Micro with CMSIS-NN kernels, k_cycle_get_32 ticks, emulated "
	       "(QEMU -icount)\n");
	for (const Case &c : cases) {
		if (run_case(c, resolver)) {
			profile(c.name, load(c.name, c.model), resolver);
		}
	}
	for (const Network &network : networks) {
		if (run_network(network, resolver)) {
			profile(network.name, load(network.name, network.model), resolver);
		}
	}
	printk("tflm_peer: DONE\n");
	return 0;
}
