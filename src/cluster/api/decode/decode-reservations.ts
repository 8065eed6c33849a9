/**
 * Reservations (`GET /slurm/vX/reservations/`): the same members in every version; v0.0.38 has
 * plain numbers, v0.0.40+ no-val structs for the times, which the tolerant readers take either way.
 * Never throws.
 */
import type { ItemResult, SlurmReservation } from '../../model.js';
import { NOT_AN_OBJECT } from './common.js';
import { count, isRecord, strList, unixTime, upperWords } from '../json/read.js';
import { text } from './states.js';

export function decodeReservation(element: unknown): ItemResult<SlurmReservation> {
  if (!isRecord(element)) return NOT_AN_OBJECT;
  const name = text(element['name']);
  if (name === undefined) return { ok: false, reason: 'reservation without a name' };
  const reservation: SlurmReservation = {
    name,
    partition: text(element['partition']),
    flags: upperWords(strList(element['flags'])),
    start_time: unixTime(element['start_time']),
    end_time: unixTime(element['end_time']),
    node_list: text(element['node_list']) ?? '',
    node_count: count(element['node_count']),
    core_count: count(element['core_count']),
    users: text(element['users']),
    accounts: text(element['accounts']),
  };
  return { ok: true, item: reservation };
}
decodeReservation.members = [
  'name',
  'partition',
  'flags',
  'start_time',
  'end_time',
  'node_list',
  'node_count',
  'core_count',
  'users',
  'accounts',
] as const;
