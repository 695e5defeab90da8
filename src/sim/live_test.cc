#include "sim/live.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "net/http_client.h"
#include "sim/scenario.h"

namespace gpucanary::sim {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFleet = R"(
seed: 5
duration: 600s
fleet:
  - {nodes: "node-[1-3]", gpu: h100-sxm}
releases:
  stable: {profile: baseline}
  next: {profile: baseline}
traffic: {rps: 90}
events:
  - {at: 0s, deploy: stable, nodes: all}
)";

class LiveSimTest : public ::testing::Test {
 protected:
  LiveSimTest() : clock_(1764680000000) {}

  void SetUp() override {
    Result<Scenario> s = ParseScenario(kFleet, "live.yaml");
    ASSERT_TRUE(s.has_value());
    LiveOptions options;
    options.base_port = 0;
    options.control_port = 0;
    live_ = std::make_unique<LiveSim>(*s, EngineOptions{}, options, clock_);
    ASSERT_TRUE(live_->Start().ok());
  }

  // Moves the clock and waits until the engine has caught up with it.
  void Advance(std::int64_t ms) {
    clock_.Advance(ms);
    const std::int64_t target = clock_.NowMs();
    for (int i = 0; i < 2000; ++i) {
      if (live_->WithEngine([](Engine& e) { return e.now_ms(); }) + 100 > target) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL() << "the engine did not catch up with the clock";
  }

  std::string Control(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(live_->control_port()) + path;
  }

  Result<net::HttpResponse> Post(const std::string& path, const std::string& body) {
    net::FetchOptions o;
    o.method = "POST";
    o.body = body;
    o.content_type = "application/json";
    return net::Fetch(Control(path), o);
  }

  ManualClock clock_;
  std::unique_ptr<LiveSim> live_;
};

TEST_F(LiveSimTest, EveryNodeServesDcgmAndVllmMetrics) {
  Advance(2000);
  ASSERT_EQ(live_->endpoints().size(), 3U);
  for (const LiveSim::Endpoint& e : live_->endpoints()) {
    Result<net::HttpResponse> dcgm =
        net::Fetch("http://127.0.0.1:" + std::to_string(e.dcgm_port) + "/metrics");
    ASSERT_TRUE(dcgm.has_value()) << dcgm.error().message();
    EXPECT_EQ(dcgm->status, 200);
    EXPECT_NE(dcgm->body.find("DCGM_FI_DEV_SM_CLOCK{gpu=\"7\""), std::string::npos);
    EXPECT_NE(dcgm->body.find("Hostname=\"" + e.hostname + "\""), std::string::npos);
    Result<net::HttpResponse> vllm =
        net::Fetch("http://127.0.0.1:" + std::to_string(e.server_port) + "/metrics");
    ASSERT_TRUE(vllm.has_value());
    EXPECT_EQ(vllm->status, 200);
    EXPECT_NE(vllm->body.find("vllm:generation_tokens_total{"), std::string::npos);
    Result<net::HttpResponse> other =
        net::Fetch("http://127.0.0.1:" + std::to_string(e.dcgm_port) + "/other");
    ASSERT_TRUE(other.has_value());
    EXPECT_EQ(other->status, 404);
  }
  const Json targets = Json::parse(live_->TargetsJson());
  ASSERT_EQ(targets.size(), 6U);
  EXPECT_EQ(targets[1]["labels"]["exporter"], "vllm");
  EXPECT_EQ(targets[1]["targets"][0],
            "127.0.0.1:" + std::to_string(live_->endpoints()[0].server_port));
}

TEST_F(LiveSimTest, ControlApiDeploysInjectsAndReportsState) {
  Advance(1000);
  Result<net::HttpResponse> r = Post("/deploy", R"({"release": "next", "nodes": ["node-2"]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  Advance(500);
  // node-2 restarts: its vLLM endpoint has nothing to say for 10 s.
  Result<net::HttpResponse> down = net::Fetch(
      "http://127.0.0.1:" + std::to_string(live_->endpoints()[1].server_port) + "/metrics");
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->status, 503);
  Advance(10000);

  r = Post("/faults", R"({"kind": "power_brake", "nodes": ["node-2"], "gpus": "0-3"})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 201) << r->body;
  const int id = Json::parse(r->body)["ids"][0].get<int>();
  Advance(3000);

  Result<net::HttpResponse> state = net::Fetch(Control("/state"));
  ASSERT_TRUE(state.has_value());
  const Json s = Json::parse(state->body);
  EXPECT_EQ(s["nodes"][1]["release"], "next");
  EXPECT_EQ(s["nodes"][0]["release"], "stable");
  EXPECT_EQ(s["faults"].size(), 1U);
  EXPECT_EQ(s["nodes"][1]["gpus"][0]["sm_clock_mhz"].get<double>(), 1050);
  EXPECT_EQ(s["nodes"][1]["gpus"][0]["clock_event_reasons"].get<int>() & 0x80, 0x80);
  EXPECT_EQ(s["nodes"][1]["gpus"][4]["clock_event_reasons"].get<int>() & 0x80, 0);

  net::FetchOptions del;
  del.method = "DELETE";
  r = net::Fetch(Control("/faults/" + std::to_string(id)), del);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 204);
  r = net::Fetch(Control("/faults/" + std::to_string(id)), del);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);

  r = Post("/traffic", R"({"weights": {"stable": 1, "next": 0}})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  r = Post("/cordon", R"({"node": "node-3"})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  Advance(200);
  const Json s2 = Json::parse(net::Fetch(Control("/state"))->body);
  EXPECT_EQ(s2["nodes"][1]["arrival_rate"].get<double>(), 0);  // weight 0
  EXPECT_EQ(s2["nodes"][2]["arrival_rate"].get<double>(), 0);  // cordoned
  EXPECT_GT(s2["nodes"][0]["arrival_rate"].get<double>(), 0);

  Result<net::HttpResponse> truth = net::Fetch(Control("/truth"));
  ASSERT_TRUE(truth.has_value());
  EXPECT_NE(truth->body.find("\"kind\":\"power_brake\",\"scope\":\"node\""), std::string::npos);
  EXPECT_NE(truth->body.find("\"type\":\"cordon\",\"node\":\"node-3\""), std::string::npos);
}

TEST_F(LiveSimTest, BadControlRequestsGetClearErrors) {
  struct Case {
    std::string path;
    std::string body;
    int status;
    std::string error;
  } cases[] = {
      {"/deploy", R"({"release": "nope", "nodes": "all"})", 400, "unknown release 'nope'"},
      {"/deploy", R"({"release": "next"})", 400, "nodes: missing"},
      {"/deploy", R"({"release": "next", "nodes": [1]})", 400, "nodes[0]: expected a hostname"},
      {"/deploy", R"({"release":)", 400, "invalid JSON at byte"},
      {"/deploy", R"([1, 2])", 400, "expected a JSON object"},
      {"/faults", R"({"kind": "meltdown", "nodes": "all"})", 400, "unknown fault 'meltdown'"},
      {"/faults", R"({"kind": "thermal", "nodes": "all", "gpus": "9"})", 400, "gpus"},
      {"/faults", R"({"kind": "thermal", "nodes": "all", "params": {"width": 8}})", 400,
       "takes no parameter 'width'"},
      {"/traffic", R"({"weights": {"stable": "half"}})", 400, "weights.stable: expected a number"},
      {"/cordon", R"({"node": "node-9"})", 400, "unknown node 'node-9'"},
  };
  for (const Case& c : cases) {
    Result<net::HttpResponse> r = Post(c.path, c.body);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, c.status) << c.path << " " << c.body;
    EXPECT_NE(r->body.find(c.error), std::string::npos) << r->body;
  }
  Result<net::HttpResponse> r = net::Fetch(Control("/deploy"));  // GET on a POST endpoint
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  r = net::Fetch(Control("/nowhere"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  net::FetchOptions del;
  del.method = "DELETE";
  r = net::Fetch(Control("/faults/abc"), del);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400);
}

// Each node serves its own server's text; a `none` node serves only its GPUs
// and has no service target.
TEST(LiveSimServersTest, EachNodeServesItsServerAndANoneNodeNothing) {
  Result<Scenario> s = ParseScenario(R"(
seed: 5
duration: 600s
fleet:
  - {nodes: node-1, gpu: h100-sxm, server: sglang}
  - {nodes: node-2, gpu: h100-sxm, server: tgi}
  - {nodes: node-3, gpu: h100-sxm, server: triton_trtllm}
  - {nodes: node-4, gpu: h100-sxm, server: none}
releases: {stable: {profile: baseline}}
traffic: {rps: 80}
events: [{at: 0s, deploy: stable, nodes: all}]
)",
                                     "servers.yaml");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ManualClock clock(1764680000000);
  LiveOptions options;
  options.base_port = 0;
  options.control_port = 0;
  LiveSim live(*s, EngineOptions{}, options, clock);
  ASSERT_TRUE(live.Start().ok());
  clock.Advance(5000);
  for (int i = 0;
       i < 2000 && live.WithEngine([](Engine& e) { return e.now_ms(); }) + 100 <= clock.NowMs();
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::vector<LiveSim::Endpoint>& e = live.endpoints();
  ASSERT_EQ(e.size(), 4U);
  const auto metrics = [&](std::size_t i, const std::string& path = "/metrics") {
    return net::Fetch("http://127.0.0.1:" + std::to_string(e[i].server_port) + path);
  };
  Result<net::HttpResponse> sglang = metrics(0);
  ASSERT_TRUE(sglang.has_value());
  EXPECT_EQ(sglang->status, 200);
  EXPECT_EQ(sglang->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(sglang->body.find("# TYPE sglang:num_running_reqs gauge\n"), std::string::npos);
  Result<net::HttpResponse> tgi = metrics(1);
  ASSERT_TRUE(tgi.has_value());
  EXPECT_EQ(tgi->status, 200);
  EXPECT_NE(tgi->body.find("# TYPE tgi_request_count counter\ntgi_request_count "),
            std::string::npos);
  Result<net::HttpResponse> triton = metrics(2);
  ASSERT_TRUE(triton.has_value());
  EXPECT_EQ(triton->status, 200);
  EXPECT_NE(triton->body.find("nv_trt_llm_request_metrics{model=\"tensorrt_llm\","
                              "request_type=\"active\",version=\"1\"} "),
            std::string::npos);
  Result<net::HttpResponse> other = metrics(1, "/other");
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(e[3].server, std::nullopt);
  EXPECT_EQ(e[3].server_port, 0);
  Result<net::HttpResponse> dcgm =
      net::Fetch("http://127.0.0.1:" + std::to_string(e[3].dcgm_port) + "/metrics");
  ASSERT_TRUE(dcgm.has_value());
  EXPECT_NE(dcgm->body.find("Hostname=\"node-4\""), std::string::npos);

  const Json targets = Json::parse(live.TargetsJson());
  ASSERT_EQ(targets.size(), 7U);  // dcgm x 4, a server x 3
  std::vector<std::string> jobs;
  for (const Json& t : targets) {
    if (t["labels"]["exporter"] != "dcgm") {
      jobs.push_back(t["labels"]["exporter"].get<std::string>() + "@" +
                     t["labels"]["Hostname"].get<std::string>());
    }
  }
  EXPECT_EQ(jobs,
            (std::vector<std::string>{"sglang@node-1", "tgi@node-2", "triton_trtllm@node-3"}));
  live.Stop();
}

TEST(LiveSimStartTest, APortInUseIsAClearError) {
  Result<Scenario> s = ParseScenario(kFleet, "live.yaml");
  ASSERT_TRUE(s.has_value());
  ManualClock clock(0);
  LiveOptions options;
  options.base_port = 0;
  options.control_port = 0;
  LiveSim first(*s, EngineOptions{}, options, clock);
  ASSERT_TRUE(first.Start().ok());
  options.control_port = first.control_port();
  LiveSim second(*s, EngineOptions{}, options, clock);
  const Status st = second.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("control API"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(std::to_string(first.control_port())), std::string::npos);
}

}  // namespace
}  // namespace gpucanary::sim
