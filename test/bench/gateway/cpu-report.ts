// A benchmark helper process's own CPU time, on request of its parent (IPC message "cpu" → process.cpuUsage() in µs),
// so gateway-cpu.ts can count the CPU a proxy spends per request whatever else the machine is doing.
export function reportCpuOnRequest(): void {
  if (!process.send) return;
  process.on("message", (m) => {
    if (m === "cpu") process.send!(process.cpuUsage());
  });
  process.channel?.unref();
}
