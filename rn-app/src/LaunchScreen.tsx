/**
 * The app's only screen: runs one launch and shows where it got.
 *
 * What the driver reads (docs/app.md, "What the app reports"):
 * - `coldstart-status` (testID): the last protocol line, exactly as printed
 *   (`COLDSTART {"v":1,"id":...,"phase":...}`), so `kit.protocol.parse_line` reads it;
 * - `coldstart-summary` (testID): one human line, e.g.
 *   `done | score 0.998019 ok | ORT 1.24.3 | concurrent x3 xnnpack,cpu`.
 */
import React, { useEffect, useRef, useState } from 'react';
import { ScrollView, StyleSheet, Text, View } from 'react-native';
import type { Fields } from './protocol';
import { reportRefused, runLaunch, type Platform, type PhaseReport } from './launch';
import { generateLaunchId, parseScenario, type Scenario } from './scenario';

export interface LaunchScreenProps {
  /** The deep link the app was started with, or null (defaults, generated id). */
  readonly getInitialUrl: () => Promise<string | null | undefined>;
  /** Builds the platform; called once per launch. May throw (reported as `error`). */
  readonly makePlatform: () => Platform;
  /** Milliseconds since the app's start. */
  readonly now: () => number;
  /** Where protocol lines go (console.log in the app). */
  readonly log: (line: string) => void;
}

/**
 * The human summary shown under `coldstart-summary`: the last phase, then (when known)
 * the error message, `score <last score> ok|MISMATCH`, `ORT <version>` and the scenario.
 *
 * @param phase the last phase reported, or null before `start`.
 * @param seen every field reported so far (later phases win).
 */
export function summarize(phase: string | null, seen: Fields, scenario: Scenario | null): string {
  if (phase === null) {
    return 'starting';
  }
  const parts: string[] = [phase];
  if (phase === 'error') {
    parts.push(String(seen.message));
  }
  if (typeof seen.score === 'number') {
    parts.push(`score ${seen.score} ${seen.ok ? 'ok' : 'MISMATCH'}`);
  }
  if (typeof seen.ort_version === 'string') {
    parts.push(`ORT ${seen.ort_version}`);
  }
  if (scenario !== null) {
    parts.push(`${scenario.mode} x${scenario.sessions} ${scenario.ep.join(',')}`);
  }
  return parts.join(' | ');
}

export function LaunchScreen({ getInitialUrl, makePlatform, now, log }: LaunchScreenProps) {
  const [last, setLast] = useState<PhaseReport | null>(null);
  const [seen, setSeen] = useState<Fields>({});
  const [history, setHistory] = useState<string[]>([]);
  const [scenario, setScenario] = useState<Scenario | null>(null);
  const started = useRef(false);

  useEffect(() => {
    if (started.current) {
      return; // one launch per process: the driver cold-starts the app for each
    }
    started.current = true;
    const report = (r: PhaseReport) => {
      log(r.line);
      setLast(r);
      setSeen(prev => ({ ...prev, ...r.fields }));
      setHistory(h => [...h, `${r.phase} @ ${r.t_ms.toFixed(1)} ms`]);
    };
    (async () => {
      let url: string | null | undefined = null;
      try {
        url = await getInitialUrl();
      } catch {
        url = null;
      }
      const parsed = parseScenario(url);
      if (!parsed.ok) {
        reportRefused(parsed.id ?? generateLaunchId(), parsed.reason, now(), report);
        return;
      }
      const s: Scenario =
        parsed.scenario.id === null ? { ...parsed.scenario, id: generateLaunchId() } : parsed.scenario;
      setScenario(s);
      let platform: Platform;
      try {
        platform = makePlatform();
      } catch (err) {
        reportRefused(s.id ?? 'unknown', err instanceof Error ? err.message : String(err), now(), report);
        return;
      }
      await runLaunch(s, platform, report);
    })();
  }, [getInitialUrl, makePlatform, now, log]);

  return (
    <View style={styles.container}>
      <Text style={styles.title}>coldstart</Text>
      <Text testID="coldstart-summary" style={styles.summary}>
        {summarize(last?.phase ?? null, seen, scenario)}
      </Text>
      <Text testID="coldstart-status" style={styles.status} selectable>
        {last?.line ?? ''}
      </Text>
      <ScrollView style={styles.history}>
        {history.map((h, i) => (
          <Text key={i} style={styles.historyLine}>
            {h}
          </Text>
        ))}
      </ScrollView>
    </View>
  );
}

const styles = StyleSheet.create({
  container: { flex: 1, padding: 24, paddingTop: 64, backgroundColor: '#fff' },
  title: { fontSize: 22, fontWeight: '600', marginBottom: 12, color: '#111' },
  summary: { fontSize: 16, marginBottom: 12, color: '#111' },
  status: { fontFamily: 'monospace', fontSize: 11, color: '#333', marginBottom: 12 },
  history: { flex: 1 },
  historyLine: { fontFamily: 'monospace', fontSize: 12, color: '#555' },
});
